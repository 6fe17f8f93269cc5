"""`podracer meta-train`: meta-train a learned update rule (LPG) on Anakin, as `configs/anakin_lpg_gridworlds.py` says.

Bad input (a field, the config file, the workdir) is a line naming it, exit
status 2, before anything is compiled or written. The run records its
meta-objective and the agents' returns as it goes, checkpoints into
WORKDIR/checkpoints (a run started again on the workdir resumes bitwise) and
writes the meta-network to WORKDIR/rule at every checkpoint.
"""

import argparse
import sys

from podracer.cli.common import Commands, add_command, add_overrides, report
from podracer.cli.train import check_workdir
from podracer.config.errors import UsageError


def register(commands: Commands) -> None:
    """Adds `podracer meta-train`."""
    parser = add_command(
        commands,
        "meta-train",
        meta_train,
        "meta-train a learned update rule (LPG) over a population of agents, on Anakin",
        "Meta-train an LPG meta-network over a population of agents on the environments the config lists. "
        "With --workdir, the records, checkpoints and the rule (WORKDIR/rule, for agent.name=learned_rule) go "
        "there, and a run started again on it resumes.",
    )
    parser.add_argument(
        "--config",
        required=True,
        metavar="CONFIG_FILE",
        help="the meta-training, e.g. configs/anakin_lpg_gridworlds.py",
    )
    add_overrides(parser)
    parser.add_argument(
        "--workdir", metavar="DIR", help="the run's folder: created if new, resumed from if it holds checkpoints"
    )
    parser.add_argument("--noprogress", dest="progress", action="store_false", help="leave out the progress bar")


def meta_train(args: argparse.Namespace) -> int:
    """Meta-trains `args.config` with `args.overrides`; the exit status."""
    try:
        check_workdir(args.workdir)
    except UsageError as error:
        return report(args.prog, error)

    from podracer.config.errors import ConfigError
    from podracer.config.loading import load
    from podracer.experiment.meta_run import meta_train as run
    from podracer.run.progress import ProgressBar
    from podracer.run.stopping import StoppedBySignal

    try:
        config = load(args.config, args.overrides)
    except (ValueError, OSError) as error:  # ConfigError and ConfigFileError included.
        return report(args.prog, error)
    try:
        history = run(config, workdir=args.workdir, callbacks=[ProgressBar()] if args.progress else [])
    except ConfigError as error:
        return report(args.prog, error)
    except StoppedBySignal as error:
        print(f"{args.prog}: {error}", file=sys.stderr)
        return 128 + error.signal_number
    last = history[-1]
    print(
        f"done: {last['meta_update']} meta-updates, {last['step']:,} agent steps, meta-loss {last['meta_loss']:.4f}, "
        f"agents' mean return {last['mean_episode_return']:.3f}"
        + (f"; rule in {args.workdir}/rule" if args.workdir else "")
    )
    return 0
