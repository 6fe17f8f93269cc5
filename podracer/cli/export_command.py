"""`podracer export`: a trained run's policy as a `jax.export` artefact that acts with JAX alone.

It loads the newest checkpoint of WORKDIR (or `--checkpoint UPDATE`, a
population's `--member I`) as `podracer evaluate` does, and writes the greedy
policy (or with `--sample` the sampling one) to `--out`, with its description
beside it (`podracer.experiment.export`). A bad `--out` is refused before the
checkpoint is read; every error exits 2 with one line naming what to change.
"""

import argparse

from podracer.cli.common import Commands, add_command, checkpoint_error, missing_workdir, report


def register(commands: Commands) -> None:
    """Adds `podracer export`."""
    parser = add_command(
        commands,
        "export",
        export,
        "write a trained run's policy as a jax.export artefact that acts without podracer",
        "Serialise the policy of a run's newest checkpoint (or --checkpoint) with jax.export: "
        "jax.export.deserialize(bytes).call(observations) returns actions, with JAX alone. "
        "Needs the export extra (flatbuffers).",
    )
    parser.add_argument("workdir", metavar="WORKDIR", help="the --workdir of a podracer train run")
    parser.add_argument("--out", required=True, metavar="FILE", help="the artefact to write, e.g. policy.bin")
    parser.add_argument("--sample", action="store_true", help="export the sampling policy (it takes keys)")
    parser.add_argument("--checkpoint", type=int, metavar="UPDATE", help="the checkpoint (its update count)")
    parser.add_argument("--member", type=int, metavar="I", help="a population's member to export")
    parser.add_argument("--batch-size", type=int, metavar="B", help="a fixed batch size (default: any)")


def export(args: argparse.Namespace) -> int:
    """Writes `args.workdir`'s policy to `args.out`; the exit status."""
    if problem := missing_workdir(args.workdir):
        return report(args.prog, problem)
    from podracer.config.errors import ConfigError, UsageError  # Imports JAX: once the arguments look good.
    from podracer.experiment import export as export_lib
    from podracer.experiment import trained

    try:
        export_lib.artefact_paths(args.out, recurrent=False)  # A bad --out, before the checkpoint is read.
        agent = trained.load(args.workdir, args.checkpoint, args.member)
        description = export_lib.export_policy(agent, args.out, greedy=not args.sample, batch_size=args.batch_size)
    except ConfigError as error:
        return report(args.prog, checkpoint_error(error))
    except UsageError as error:
        return report(args.prog, error)
    print(f"wrote {args.out}: {description['call']} ({agent.checkpoint}, step {agent.step:,})")
    return 0
