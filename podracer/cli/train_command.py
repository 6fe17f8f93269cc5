"""`podracer train`: train an agent described by a config file, with `--config.FIELD=VALUE` overrides.

Configuration errors (an unknown field, a value that cannot work on this
machine), a config file that does not parse or raises, and a `--workdir`
that is a file or cannot be created are reported in a line or two naming
the field, file or flag and the fix, before anything is compiled or
written, with exit status 2; the workdir is checked before JAX is even
imported. A failed Sebulba thread exits 1 with its traceback, a non-finite
loss, gradient or parameter exits 1 naming the update, a full disk exits 1
naming the last good checkpoint and how to resume; SIGINT and SIGTERM
exit 130 and 143 after a checkpoint.
"""

import argparse
import math
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from podracer.cli.common import EXIT_FAILURE, Commands, add_command, add_overrides, report
from podracer.config.errors import UsageError, count


def register(commands: Commands) -> None:
    """Adds `podracer train`."""
    parser = add_command(
        commands,
        "train",
        train,
        "train an agent described by a config file (podracer configs lists them)",
        "Train an agent described by an ml_collections config file, with any of its fields overridden. "
        "Prints a summary line at the end; with --workdir, the records, TensorBoard events, the resolved "
        "config and checkpoints go there, and a run started again on it resumes.",
    )
    parser.add_argument(
        "--config", required=True, metavar="CONFIG_FILE", help="the experiment, e.g. configs/anakin_catch.py"
    )
    add_overrides(parser)
    parser.add_argument(
        "--workdir", metavar="DIR", help="the run's folder: created if new, resumed from if it holds checkpoints"
    )
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("--noprogress", dest="progress", action="store_false", help="leave out the progress bar")
    progress.add_argument("--progress", dest="progress", action="store_true", help="show it (the default)")
    parser.set_defaults(progress=True)


def train(args: argparse.Namespace) -> int:
    """Trains the config `args.config` with `args.overrides`; the exit status."""

    def run(config, **kwargs):
        from podracer.experiment.train import train as train_run  # Here, so a bad workdir is reported without JAX.

        return train_run(config, **kwargs)

    def failures() -> tuple:
        from podracer.run.disk_full import DiskFull
        from podracer.run.finite import NonFiniteError
        from podracer.sebulba.sebulba_train import ThreadFailed

        return ThreadFailed, NonFiniteError, DiskFull

    result, code = load_and_run(args, run, failures)
    if code is not None:
        return code
    import jax

    from podracer.run.contract import recent_return

    if jax.process_index() == 0:
        returns = f"mean episode return {recent_return(result.history):.3f} (the last 100 episodes)"
        if math.isnan(recent_return(result.history)) and not math.isnan(recent_return(result.history, evaluated=True)):
            returns = (
                f"mean evaluation return {recent_return(result.history, evaluated=True):.3f} (the last 100 episodes)"
            )
        print(
            f"done: {result.steps:,} steps on {count(jax.device_count(), 'device')} in "
            f"{count(jax.process_count(), 'process', 'processes')}, {returns}, "
            f"{result.history[-1]['steps_per_second']:,.0f} steps/s"
            + (f"; logs in {args.workdir}" if args.workdir else "")
        )
    return 0


def load_and_run(
    args: argparse.Namespace, run: Callable, failures: Callable[[], tuple] = tuple
) -> tuple[Any, int | None]:
    """`(run(config, workdir=, callbacks=), None)` for the config `args.config` with `args.overrides`, or `(None, the
    exit status)` where it failed: 2 for a bad workdir or config, 1 for an error of the types `failures()` names
    (imported only once the workdir is checked), 128 + N for signal N.

    What `podracer train` and `podracer meta-train` share: the checks before
    anything compiles, the progress bar, and the exits.
    """
    try:
        check_workdir(args.workdir)
    except UsageError as error:
        return None, report(args.prog, error)

    from podracer.config.errors import ConfigError  # Imported here, so a malformed command line is reported fast.
    from podracer.experiment.schema import load_config
    from podracer.run.progress import ProgressBar
    from podracer.run.stopping import StoppedBySignal

    try:
        config = load_config(args.config, args.overrides)
    except (ValueError, OSError) as error:  # ConfigError and ConfigFileError included.
        return None, report(args.prog, error)
    failing = failures()
    try:
        return run(config, workdir=args.workdir, callbacks=[ProgressBar()] if args.progress else []), None
    except ConfigError as error:
        return None, report(args.prog, error)
    except failing as error:
        return None, report(args.prog, error, EXIT_FAILURE)
    except StoppedBySignal as error:
        print(f"{args.prog}: {error}", file=sys.stderr)
        return None, 128 + error.signal_number


def check_workdir(workdir: str | None) -> None:
    """`UsageError` naming `--workdir` unless it is a folder to write in, or one that can be created. Leaves nothing.

    A new workdir is tried by creating, then removing, an empty folder in its
    nearest existing parent: only that tells a read-only disk, a folder of
    another user or a pseudo file system (/proc) from a place a run can write.
    """
    if workdir is None:
        return
    if os.path.lexists(workdir):
        if not os.path.isdir(workdir):
            raise UsageError(f"--workdir {workdir!r} is a file, not a folder; pass a folder (a new one is created)")
        if not os.access(workdir, os.W_OK | os.X_OK):
            raise UsageError(f"--workdir {workdir!r} is not writable; pass a folder you can write in")
        return
    parent = os.path.dirname(os.path.abspath(workdir))
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise UsageError(f"--workdir {workdir!r} cannot be created: {parent!r} is a file, not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".podracer-workdir-check-", dir=parent))
    except OSError as error:
        raise UsageError(
            f"--workdir {workdir!r} cannot be created in {parent!r} ({error.strerror}); pass a folder you can write in"
        ) from None
