"""`podracer meta-train`: meta-train a learned update rule (LPG) on Anakin, as `configs/anakin_lpg_gridworlds.py` says.

Bad input (a field, the config file, the workdir) is a line naming it, exit
status 2, before anything is compiled or written. The run records its
meta-objective and the agents' returns as it goes, checkpoints into
WORKDIR/checkpoints (a run started again on the workdir resumes bitwise) and
writes the meta-network to WORKDIR/rule at every checkpoint.
"""

import argparse

from podracer.cli.common import Commands, add_command, add_overrides
from podracer.cli.train_command import load_and_run


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

    def run(config, **kwargs):
        from podracer.experiment.meta_run import meta_train as meta_run  # Here: a bad command line needs no JAX.

        return meta_run(config, **kwargs)

    history, code = load_and_run(args, run)
    if code is not None:
        return code
    last = history[-1]
    print(
        f"done: {last['meta_update']} meta-updates, {last['step']:,} agent steps, meta-loss {last['meta_loss']:.4f}, "
        f"agents' mean return {last['mean_episode_return']:.3f}"
        + (f"; rule in {args.workdir}/rule" if args.workdir else "")
    )
    return 0
