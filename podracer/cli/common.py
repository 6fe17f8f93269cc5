"""What every `podracer` command shares: its parser, how it registers with its handler, and how errors are told.

A command module's `register(commands)` calls `add_command` once per command:
the command's parser, its one-line summary and its handler, a function from
the parsed arguments to the exit status, all in one place. Its parser's
errors are `CommandLineError`s naming the command, which `podracer.cli.run`
prints in one line with exit status 2.

A command that reads a config takes its fields as `--config.FIELD=VALUE` (or
`--config.FIELD VALUE`), any number of them, the convention of ml_collections'
config flags: `add_overrides` declares them, for the help and the usage, and
`split_overrides` takes them out of the command line before argparse reads
the rest, into `args.overrides`.
"""

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from podracer.config.errors import UsageError

EXIT_FAILURE = 1
EXIT_USAGE = 2
OVERRIDE_PREFIX = "--config."

Handler = Callable[[argparse.Namespace], int]
Commands = argparse._SubParsersAction  # What `add_subparsers` returns: the group a command registers in.


class CommandLineError(UsageError):
    """A malformed command line, found by the parser of the command `prog` ("podracer train", say)."""

    def __init__(self, prog: str, message: str):
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """An `ArgumentParser` that raises `CommandLineError` for a bad argument, for the caller to report and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise CommandLineError(self.prog, message)


def add_command(commands: Commands, name: str, handler: Handler, summary: str, description: str = "") -> Parser:
    """Registers the command `name` under `commands`: its parser, which `handler` runs; the parser, for its options.

    `summary` is its line in `podracer --help`; `description` opens its own
    `--help` (the summary when empty).
    """
    parser = commands.add_parser(name, help=summary, description=description or summary, allow_abbrev=False)
    parser.set_defaults(handler=handler, prog=parser.prog, takes_overrides=False)
    return parser


def add_overrides(parser: Parser) -> None:
    """Declares that `parser`'s command takes `--config.FIELD=VALUE` overrides (`args.overrides`, a dict)."""
    parser.add_argument(
        f"{OVERRIDE_PREFIX}FIELD=VALUE",
        action="store_true",
        default=argparse.SUPPRESS,  # Never parsed here: `split_overrides` takes every override out first.
        help="set a field of the config, as many as needed: --config.num_envs=64 --config.agent.gamma=0.99 "
        '(a tuple: --config.network.hidden_sizes="(64, 64)"); --config.agent.name=ppo switches to that agent, '
        "at its defaults; an unknown field or a value of the wrong type is an error naming the field",
    )
    parser.set_defaults(takes_overrides=True)


def split_overrides(argv: Sequence[str]) -> tuple[list[str], dict[str, str | None]]:
    """The arguments without the `--config.FIELD=VALUE` overrides, and the overrides (None: a value is missing).

    An override's value follows `=` or is the next argument; everything after
    `--` is left as it is.
    """
    rest: list[str] = []
    overrides: dict[str, str | None] = {}
    args = iter(argv)
    for arg in args:
        if arg == "--":
            rest += [arg, *args]
        elif arg.startswith(OVERRIDE_PREFIX):
            name, has_value, value = arg.partition("=")
            if not has_value:
                value = next(args, None)
                if value is not None and value.startswith("--"):  # The next option, not a value.
                    rest.append(value)
                    value = None
            overrides[name[len(OVERRIDE_PREFIX) :]] = value
        else:
            rest.append(arg)
    return rest, overrides


def report(prog: str, error: Exception | str, code: int = EXIT_USAGE) -> int:
    """Prints `error` as `prog: error: ...` on stderr; returns `code`, the exit status."""
    print(f"{prog}: error: {error}", file=sys.stderr)
    return code


def use_agg() -> None:
    """Selects matplotlib's file-only backend (no display needed); an ImportError that says how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError("matplotlib is not installed: pip install -e '.[plot]' (or pip install matplotlib)") from None
    matplotlib.use("Agg")


def checkpoint_error(error: Exception) -> str:
    """A `podracer.experiment.trained.load` refusal in the command line's words: the argument it names."""
    return str(error).replace("config.workdir", "WORKDIR").replace("config.", "--")


def missing_workdir(workdir: str) -> str | None:
    """What is wrong with a WORKDIR argument that is not a folder; None if it is one."""
    if os.path.isdir(workdir):
        return None
    return f"WORKDIR {workdir!r} is not a folder; give the --workdir of a podracer train run"
