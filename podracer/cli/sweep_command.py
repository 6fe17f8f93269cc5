"""`podracer sweep`: search a config's hyperparameters with Optuna (`podracer.tuning.sweep`), the `tune` extra.

Bad input (a flag, the config, a search space naming a field the config lacks
or a range it refuses, an objective metric the run does not log) is a line
naming it, exit status 2; all but the metric are found before any trial
starts, and the metric at the first trial's first log record, after which a
new sweep's workdir is removed. Trials that fail (a non-finite loss, values
the config refuses together) are recorded as failed and the sweep goes on.
"""

import argparse
import os
import shutil

from podracer.cli.common import Commands, add_command, add_overrides, report
from podracer.cli.train_command import check_workdir
from podracer.config.errors import UsageError

SAMPLERS = ("tpe", "random", "grid")
PRUNERS = ("none", "median", "halving")


def register(commands: Commands) -> None:
    """Adds `podracer sweep`."""
    parser = add_command(
        commands,
        "sweep",
        sweep,
        "search a config's hyperparameters with Optuna, many trials in one Anakin program",
        "Run --trials trials of the config, each with values Optuna's sampler picks from the search space, and "
        "write Optuna's storage (optuna.db), trials.csv, best_config.py and sweep.png to the workdir. On Anakin, "
        "--parallel trials that differ only in real-valued agent and optimizer fields train as the members of one "
        "program. Started again on its workdir, a sweep goes on where it stopped.",
    )
    parser.add_argument("--config", required=True, metavar="CONFIG_FILE", help="the experiment to tune")
    add_overrides(parser)
    parser.add_argument("--space", required=True, metavar="FILE", help="the search space: a YAML or Python file")
    parser.add_argument("--trials", required=True, type=int, metavar="N", help="trials to finish in all")
    parser.add_argument("--workdir", required=True, metavar="DIR", help="the sweep's folder; run again to go on")
    parser.add_argument(
        "--parallel", type=int, default=1, metavar="P", help="Anakin: trials trained at once in one program"
    )
    parser.add_argument("--metric", default="mean_episode_return", help="the objective: a field of the log records")
    parser.add_argument("--direction", choices=("maximize", "minimize"), default="maximize")
    parser.add_argument("--sampler", choices=SAMPLERS, default="tpe", help="Optuna's sampler (grid: choices only)")
    parser.add_argument("--pruner", choices=PRUNERS, default="none", help="Optuna's pruner, fed by each log record")


def sweep(args: argparse.Namespace) -> int:
    """Runs the sweep `args` describe; the exit status."""
    fresh = not os.path.exists(args.workdir)
    try:
        check_workdir(args.workdir)
        if args.trials < 1 or args.parallel < 1:
            raise UsageError(f"--trials and --parallel must be at least 1, got {args.trials} and {args.parallel}")
        from podracer.tuning import sweep as tuning_sweep  # Here: Optuna and JAX only for a sound command line.
    except UsageError as error:
        return report(args.prog, error)
    except ImportError as error:
        return report(args.prog, f"podracer sweep needs Optuna ({error}): pip install -e '.[tune]'")
    from podracer.config.errors import ConfigError
    from podracer.experiment.train import train

    search = {name: getattr(args, name) for name in ("trials", "parallel", "metric", "direction", "sampler", "pruner")}
    try:
        setup = tuning_sweep.prepare(args.config, args.overrides, args.space, args.workdir, **search)
        study = tuning_sweep.run(setup, train)
    except (ValueError, OSError) as error:  # ConfigError and ConfigFileError included.
        if fresh and isinstance(error, ConfigError) and not tuning_sweep.any_finished(args.workdir):
            shutil.rmtree(args.workdir, ignore_errors=True)  # A refused sweep leaves no half-begun workdir behind.
        return report(args.prog, error)
    print(tuning_sweep.summary(setup, study))
    return 0
