"""The `podracer` command line.

    podracer train --config configs/X.py [--config.FIELD=VALUE ...] [--workdir DIR] [--noprogress]

Configuration errors (an unknown field, a value that cannot work on this
machine) are reported with the field and the fix, before anything is
compiled or written, and exit with status 2. A failed Sebulba thread exits 1
with its traceback; SIGINT and SIGTERM exit 130 and 143 after a clean stop.
"""

import sys
from collections.abc import Sequence

USAGE = """usage: podracer train --config CONFIG_FILE [--config.FIELD=VALUE ...] [--workdir DIR] [--noprogress]

commands:
  train   train an agent described by an ml_collections config file (see configs/)
"""

EXIT_FAILURE = 1
EXIT_USAGE = 2


class UsageError(ValueError):
    """A malformed command line."""


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
        return _error(error)

    # Imported here, so a malformed command line is reported without loading JAX.
    import jax

    import podracer
    from podracer.sebulba.train import StoppedBySignal, ThreadFailed

    try:
        config = podracer.load_config(path, overrides)
    except (ValueError, OSError) as error:  # ConfigError included.
        return _error(error)
    try:
        result = podracer.train(config, workdir=workdir, callbacks=[podracer.ProgressBar()] if progress else [])
    except podracer.ConfigError as error:
        return _error(error)
    except ThreadFailed as error:
        return _error(error, EXIT_FAILURE)
    except StoppedBySignal as error:
        print(f"podracer train: {error}", file=sys.stderr)
        return 128 + error.signal_number
    final = result.history[-1]
    if jax.process_index() == 0:
        print(
            f"done: {result.steps:,} steps on {_count(jax.device_count(), 'device')} in "
            f"{_count(jax.process_count(), 'process', 'processes')}, "
            f"mean episode return {final['mean_episode_return']:.3f}, {final['steps_per_second']:,.0f} steps/s"
            + (f"; logs in {workdir}" if workdir else "")
        )
    return 0


def _error(error: Exception, code: int = EXIT_USAGE) -> int:
    print(f"podracer train: error: {error}", file=sys.stderr)
    return code


def _count(number: int, singular: str, plural: str = "") -> str:
    return f"{number} {singular if number == 1 else plural or singular + 's'}"


COMMANDS = {"train": train}


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2 or argv[1] not in COMMANDS:
        print(USAGE, file=sys.stderr)
        sys.exit(EXIT_USAGE)
    sys.exit(COMMANDS[argv[1]](argv[2:]))


if __name__ == "__main__":
    main()
