"""`podracer collect`: record a trained run's policy as a dataset, for training from it (`offline.dataset`).

It loads the run's newest checkpoint (or `--checkpoint UPDATE`, a
population's `--member`), plays its environment, greedily or sampling, mixed
with uniformly random actions at rate `--epsilon` (`podracer.experiment.collect`),
and writes whole episodes holding at least `--steps` transitions as the
Minari dataset `--out` (the `offline` extra). A missing run, an existing
`--out` and bad numbers exit 2 before anything is played or written; a
killed collect leaves no `--out` behind.
"""

import argparse
import os

from podracer.cli.common import Commands, add_command, checkpoint_error, missing_workdir, report


def register(commands: Commands) -> None:
    """Adds `podracer collect`."""
    parser = add_command(
        commands,
        "collect",
        collect,
        "record a trained run's policy as a dataset (Minari) to train from offline",
        "Play the agent of a run's newest checkpoint (or --checkpoint), greedily or sampling, with a share "
        "--epsilon of random actions, and write whole episodes of at least --steps transitions as a Minari dataset. "
        "Needs the offline extra (minari).",
    )
    parser.add_argument("workdir", metavar="WORKDIR", help="the --workdir of a podracer train run")
    parser.add_argument("--steps", type=int, required=True, metavar="N", help="transitions to record, at least")
    parser.add_argument("--out", required=True, metavar="DATASET", help="the dataset's folder, which must not exist")
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument("--greedy", dest="greedy", action="store_true", default=True, help="most likely actions")
    policy.add_argument("--sample", dest="greedy", action="store_false", help="actions sampled from the policy")
    parser.add_argument(
        "--epsilon",
        type=float,
        default=0.0,
        metavar="E",
        help="share of uniformly random actions (default 0; 1: random)",
    )
    parser.add_argument("--num-envs", type=int, default=16, metavar="B", help="environments played at once (16)")
    parser.add_argument("--seed", type=int, default=0, help="the environments', policy's and random actions' draws")
    parser.add_argument("--checkpoint", type=int, metavar="UPDATE", help="the checkpoint (its update count)")
    parser.add_argument("--member", type=int, metavar="I", help="a population's member to play")


def collect(args: argparse.Namespace) -> int:
    """Records `args.steps` transitions of `args.workdir`'s agent into `args.out`; prints what it wrote."""
    problem = _check(args)
    if problem:
        return report(args.prog, problem)
    from podracer.config.errors import ConfigError, UsageError  # Imports JAX: only once the arguments are good.
    from podracer.experiment import collect as recording
    from podracer.experiment import trained

    try:
        agent = trained.load(args.workdir, args.checkpoint, args.member)
    except ConfigError as error:  # No checkpoint, no such checkpoint or member: the flag it names.
        return report(args.prog, checkpoint_error(error))
    policy = recording.Policy(greedy=args.greedy, epsilon=args.epsilon, seed=args.seed)
    try:
        episodes = recording.collect(agent, args.steps, args.out, policy, args.num_envs)
    except UsageError as error:
        return report(args.prog, error)
    steps = sum(episode.steps for episode in episodes)
    returns = [episode.episode_return for episode in episodes]
    print(
        f"wrote {args.out}: {len(episodes):,} episodes, {steps:,} transitions, mean return {sum(returns) / len(returns):.6g} "
        f"({'greedy' if args.greedy else 'sampled'} actions of {agent.checkpoint}, epsilon {args.epsilon:g})"
    )
    return 0


def _check(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments themselves, before anything is loaded; None if nothing."""
    if problem := missing_workdir(args.workdir):
        return problem
    if args.steps < 1 or args.num_envs < 1:
        return "--steps and --num-envs must be at least 1"
    if not 0.0 <= args.epsilon <= 1.0:
        return f"--epsilon {args.epsilon:g} is not a probability; give one in [0, 1]"
    if os.path.lexists(args.out):
        return f"--out {args.out!r} exists already; choose a new folder (a dataset is never written over)"
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        return f"--out {args.out!r}: its folder does not exist; create it or choose another"
    try:
        import minari  # noqa: F401
    except ImportError:
        return "datasets need Minari: pip install -e '.[offline]'"
    return None
