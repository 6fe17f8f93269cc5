"""The `podracer` command line: `podracer train --config configs/X.py [--config.field=value ...] [--workdir DIR]`.

Configuration errors (an unknown field, a value that cannot work on this
machine) are reported with the field and the fix, before anything is
compiled, and exit with status 2.
"""

import os
import runpy
import sys
from typing import Optional, Sequence

from absl import flags
from ml_collections import config_flags

USAGE = """usage: podracer train --config CONFIG_FILE [--config.FIELD=VALUE ...] [--workdir DIR]

commands:
  train   train an agent described by an ml_collections config file (see configs/)
"""

EXIT_USAGE = 2
EXIT_FAILURE = 1


def _config_file(argv: Sequence[str]) -> Optional[str]:
    for index, arg in enumerate(argv):
        if arg.startswith("--config="):
            return arg.split("=", 1)[1].split(":", 1)[0]
        if arg == "--config" and index + 1 < len(argv):
            return argv[index + 1].split(":", 1)[0]
    return None


def _check_overrides(argv: Sequence[str]) -> None:
    """Names the first `--config.FIELD` override that the config file does not define."""
    path = _config_file(argv)
    if path is None:
        raise flags.Error("--config is required, e.g. --config configs/anakin_catch.py")
    if not os.path.isfile(path):
        raise flags.Error(f"--config: no such file {path!r}; pass a file from configs/, e.g. configs/anakin_catch.py")
    config = runpy.run_path(path)["get_config"]()
    for arg in argv:
        if not arg.startswith("--config."):
            continue
        field = arg[len("--config."):].split("=", 1)[0]
        node = config
        for part in field.split("."):
            if not hasattr(node, "keys") or part not in node:
                raise flags.Error(
                    f"config.{field}: {path} has no such field; "
                    f"fields at that level are {sorted(node.keys()) if hasattr(node, 'keys') else []}"
                )
            node = node[part]


def _parse_train_flags(argv: Sequence[str]) -> flags.FlagValues:
    _check_overrides(argv)
    flag_values = flags.FlagValues()
    config_flags.DEFINE_config_file(
        "config", None, "Experiment config file (configs/*.py).", flag_values=flag_values, lock_config=True,
        sys_argv=list(argv),  # Overrides are read from these arguments, not from sys.argv.
    )
    flags.DEFINE_string("workdir", None, "Directory for metrics.jsonl, TensorBoard events and the resolved config.", flag_values=flag_values)
    flags.DEFINE_bool("progress", True, "Show a progress bar.", flag_values=flag_values)
    flag_values(list(argv))
    return flag_values


def _usage_error(error: Exception) -> int:
    print(f"podracer train: error: {error}", file=sys.stderr)
    return EXIT_USAGE


def train(argv: Sequence[str]) -> int:
    try:
        flag_values = _parse_train_flags(argv)
    except flags.Error as error:
        return _usage_error(error)

    # Imported here, so a malformed command line (no config file, say) is reported without loading JAX.
    import jax

    from podracer import anakin, distributed, sebulba
    from podracer import config as config_lib

    config = flag_values.config
    try:
        distributed.start(config)  # Before anything touches a device.
        config_lib.validate(config)
    except config_lib.ConfigError as error:
        return _usage_error(error)

    train_fn = sebulba.train if config.architecture == "sebulba" else anakin.train
    try:
        _, history = train_fn(config, workdir=flag_values.workdir, show_progress=flag_values.progress)
    except sebulba.ThreadFailed as error:
        print(f"podracer train: error: {error}", file=sys.stderr)
        return EXIT_FAILURE
    except sebulba.StoppedBySignal as error:
        print(f"podracer train: {error}", file=sys.stderr)
        return 128 + error.signal_number
    final = history[-1]
    if jax.process_index() == 0:
        print(
            f"done: {final['step']:,} steps on {_count(jax.device_count(), 'device')} in "
            f"{_count(jax.process_count(), 'process', 'processes')}, "
            f"mean episode return {final['mean_episode_return']:.3f}, {final['steps_per_second']:,.0f} steps/s"
            + (f"; logs in {flag_values.workdir}" if flag_values.workdir else "")
        )
    return 0


def _count(number: int, singular: str, plural: str = "") -> str:
    return f"{number} {singular if number == 1 else plural or singular + 's'}"


COMMANDS = {"train": train}


def main(argv: Optional[Sequence[str]] = None) -> None:
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2 or argv[1] not in COMMANDS:
        print(USAGE, file=sys.stderr)
        sys.exit(EXIT_USAGE)
    sys.exit(COMMANDS[argv[1]]([argv[0]] + argv[2:]))


if __name__ == "__main__":
    main()
