"""The `podracer` command line.

    podracer train --config configs/X.py [--config.FIELD=VALUE ...] [--workdir DIR] [--noprogress]
    podracer plot WORKDIR [WORKDIR ...] --out FILE.png [--title TEXT]
    podracer bench [--figures 4a,4b,4c,pipeline,suites,population] [--repeats N] [--quick] [--out DIR] [--cpu] [--devices N]
                   [--sebulba-env pong|cartpole]

Configuration errors (an unknown field, a value that cannot work on this
machine) are reported with the field and the fix, before anything is
compiled or written, and exit with status 2. A failed Sebulba thread exits 1
with its traceback, a non-finite loss, gradient or parameter exits 1 naming the
update; SIGINT and SIGTERM exit 130 and 143 after a checkpoint. `plot` draws the
runs' learning curves, throughput and time shares (`podracer.plot.summary`)
into one image; a missing workdir or one without `metrics.jsonl` exits 2.
`bench` measures the throughput figures of the Podracer paper (Figure 4) on
this machine (`podracer.bench`); a bad argument exits 2 before anything runs,
a measurement that failed exits 1 after the others are written.
"""

import os
import sys
from collections.abc import Sequence

from podracer.config.errors import UsageError, count
from podracer.runtime import host_memory

USAGE = """usage: podracer train --config CONFIG_FILE [--config.FIELD=VALUE ...] [--workdir DIR] [--noprogress]
       podracer plot WORKDIR [WORKDIR ...] --out FILE.png [--title TEXT]
       podracer bench [--figures 4a,4b,4c,pipeline,suites,population] [--repeats N] [--quick] [--out DIR] [--cpu] [--devices N]
                      [--sebulba-env pong|cartpole]

commands:
  train   train an agent described by an ml_collections config file (see configs/)
  plot    draw the learning curves, throughput and time shares of runs (their workdirs), overlaid
  bench   measure steady-state throughput (Figure 4 of the Podracer paper) into a CSV, a table and figures
"""

PLOT_FORMATS = (".png", ".pdf", ".svg")

EXIT_FAILURE = 1
EXIT_USAGE = 2


def parse_train_arguments(argv: Sequence[str]) -> tuple[str, dict, str | None, bool]:
    """`(config path, {field: text}, workdir, show progress)` from the arguments after `train`."""
    path, overrides, workdir, progress = None, {}, None, True
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, has_value, value = arg.partition("=")
        if name in ("--config", "--workdir") or name.startswith("--config."):
            if not has_value:
                if not args:
                    raise UsageError(f"{name} needs a value")
                value = args.pop(0)
            if name == "--config":
                path = value
            elif name == "--workdir":
                workdir = value
            else:
                overrides[name[len("--config.") :]] = value
        elif arg in ("--noprogress", "--progress"):
            progress = arg == "--progress"
        else:
            raise UsageError(f"unknown argument {arg!r}\n{USAGE}")
    if path is None:
        raise UsageError("--config is required, e.g. --config configs/anakin_catch.py")
    return path, overrides, workdir, progress


def train(argv: Sequence[str]) -> int:
    try:
        path, overrides, workdir, progress = parse_train_arguments(argv)
    except UsageError as error:
        return _error("train", error)

    # Imported here, so a malformed command line is reported without loading JAX.
    import jax

    from podracer.config.errors import ConfigError
    from podracer.config.loading import load
    from podracer.experiment.train import train as train_run
    from podracer.run.contract import recent_return
    from podracer.run.finite import NonFiniteError
    from podracer.run.progress import ProgressBar
    from podracer.run.stopping import StoppedBySignal
    from podracer.sebulba.train import ThreadFailed

    try:
        config = load(path, overrides)
    except (ValueError, OSError) as error:  # ConfigError included.
        return _error("train", error)
    try:
        result = train_run(config, workdir=workdir, callbacks=[ProgressBar()] if progress else [])
    except ConfigError as error:
        return _error("train", error)
    except (ThreadFailed, NonFiniteError) as error:
        return _error("train", error, EXIT_FAILURE)
    except StoppedBySignal as error:
        print(f"podracer train: {error}", file=sys.stderr)
        return 128 + error.signal_number
    if jax.process_index() == 0:
        final = result.history[-1]
        print(
            f"done: {result.steps:,} steps on {count(jax.device_count(), 'device')} in "
            f"{count(jax.process_count(), 'process', 'processes')}, "
            f"mean episode return {recent_return(result.history):.3f} (the last 100 episodes), "
            f"{final['steps_per_second']:,.0f} steps/s" + (f"; logs in {workdir}" if workdir else "")
        )
    return 0


def parse_plot_arguments(argv: Sequence[str]) -> tuple[list[str], str, str | None]:
    """`(workdirs, output path, title)` from the arguments after `plot`."""
    workdirs, out, title = [], None, None
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, has_value, value = arg.partition("=")
        if name in ("--out", "--title"):
            if not has_value:
                if not args:
                    raise UsageError(f"{name} needs a value")
                value = args.pop(0)
            out, title = (value, title) if name == "--out" else (out, value)
        elif arg.startswith("-"):
            raise UsageError(f"unknown argument {arg!r}\n{USAGE}")
        else:
            workdirs.append(arg)
    if not workdirs:
        raise UsageError("give at least one WORKDIR, the --workdir of a `podracer train` run")
    if out is None:
        raise UsageError("--out is required, e.g. --out runs/catch.png")
    if os.path.splitext(out)[1].lower() not in PLOT_FORMATS:
        raise UsageError(f"--out {out!r}: name a {', '.join(PLOT_FORMATS)} file")
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise UsageError(f"--out {out!r}: its folder does not exist; create it or choose another")
    return workdirs, out, title


def plot(argv: Sequence[str]) -> int:
    try:
        workdirs, out, title = parse_plot_arguments(argv)
    except UsageError as error:
        return _error("plot", error)
    from podracer import plot as plot_lib  # numpy only; matplotlib is imported when drawing.

    try:
        runs = {
            label: plot_lib.read_metrics(workdir) for label, workdir in zip(_labels(workdirs), workdirs, strict=True)
        }
    except (OSError, ValueError) as error:
        return _error("plot", error)
    try:
        _use_agg()
    except ImportError as error:
        return _error("plot", error)
    figure = plot_lib.summary(runs, title=title)
    partial = os.path.join(os.path.dirname(os.path.abspath(out)), f".{os.path.basename(out)}.partial")
    try:
        plot_lib.save(figure, partial, file_format=os.path.splitext(out)[1][1:].lower())
        os.replace(partial, out)  # Atomic: a reader never sees half an image.
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    print(f"wrote {out}: {count(len(runs), 'run')}, {sum(len(r) for r in runs.values())} log records")
    return 0


def bench(argv: Sequence[str]) -> int:
    from podracer.bench import command

    try:
        options = command.parse_arguments(argv)
        _use_agg()  # Before measuring for minutes, not after.
    except (UsageError, ImportError) as error:
        return _error("bench", error)
    try:
        return command.run(options)
    except UsageError as error:  # What the machine cannot do, found before anything is written.
        return _error("bench", error)
    except KeyboardInterrupt:
        print("podracer bench: interrupted before the results were written", file=sys.stderr)
        return 130


def _use_agg() -> None:
    """Selects matplotlib's file-only backend (no display needed); an ImportError that says how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError("matplotlib is not installed: pip install -e '.[plot]' (or pip install matplotlib)") from None
    matplotlib.use("Agg")


def _labels(workdirs: Sequence[str]) -> list[str]:
    """Each workdir's folder name, or its whole path where two folder names are the same."""
    names = [os.path.basename(os.path.normpath(workdir)) for workdir in workdirs]
    return names if len(set(names)) == len(names) else [os.path.normpath(workdir) for workdir in workdirs]


def _error(command: str, error: Exception | str, code: int = EXIT_USAGE) -> int:
    print(f"podracer {command}: error: {error}", file=sys.stderr)
    return code


COMMANDS = {"train": train, "plot": plot, "bench": bench}


def main(argv: Sequence[str] | None = None) -> None:
    if argv is None:  # The command line itself, not a call from Python: restart once with huge pages.
        host_memory.restart_with_huge_pages()
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2 or argv[1] not in COMMANDS:
        print(USAGE, file=sys.stderr)
        sys.exit(EXIT_USAGE)
    sys.exit(COMMANDS[argv[1]](argv[2:]))


if __name__ == "__main__":
    main()
