"""The `podracer` command line: argparse subcommands, one module per family, each registering its parsers and handlers.

`train`, `meta-train`, `evaluate`, `collect`, `export`, `configs`
(`podracer configs` and `podracer config show`), `plot` and `bench`; `COMMANDS` lists the modules, in the order of `podracer --help`.
A module's `register(commands)` adds each of its commands with
`common.add_command` (its parser, summary and handler together), so a new
command is a module listed in `COMMANDS`, or a command added to a family's
module. The usage of every command is generated from these parsers
(`usage`), for `podracer --help` and for the documentation's command-line
page, which a test keeps equal to it.

Reading the arguments is cheap: no module here imports JAX at its top, so
`podracer --help` and a malformed command line answer at once. A bad
argument, config value or path is a line or two naming it, with exit status
2, before anything is compiled or written; a failed run exits 1, and SIGINT
and SIGTERM exit 130 and 143 after a checkpoint.
"""

import argparse
import sys
from collections.abc import Sequence

from podracer.cli import (
    bench_command,
    collect_command,
    configs_command,
    evaluate_command,
    export_command,
    meta_train_command,
    plot_command,
    sweep_command,
    train_command,
)
from podracer.cli.common import EXIT_USAGE, CommandLineError, Parser, report, split_overrides
from podracer.devices import host_memory

COMMANDS = (  # Each has `register(commands)`.
    train_command,
    meta_train_command,
    sweep_command,
    evaluate_command,
    collect_command,
    export_command,
    configs_command,
    plot_command,
    bench_command,
)


def build_parser() -> Parser:
    """The `podracer` parser, with every command's."""
    parser = Parser(
        prog="podracer",
        description="Train agents with Anakin and Sebulba, inspect configs, plot runs, measure throughput.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(commands)
    parser.epilog = f"each command's usage (podracer COMMAND --help for its options):\n{usage(parser)}"
    return parser


def command_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers of every command under `parser`, in order; a command with commands of its own gives theirs."""
    groups = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    if not groups:
        return [parser]
    return [command for sub in groups[0].choices.values() for command in command_parsers(sub)]


def usage(parser: argparse.ArgumentParser) -> str:
    """The usage lines of every command under `parser`, as their parsers print them (wrapped to the terminal)."""
    return "".join(command.format_usage() for command in command_parsers(parser))


def parse(argv: Sequence[str], parser: Parser | None = None) -> argparse.Namespace:
    """The arguments of the command line `argv` (without the program's name); `CommandLineError` for a bad one.

    The result has the command's options, `handler` (its function), `prog`
    (its name, "podracer train") and `overrides` (`{field: text}`).
    """
    parser = parser or build_parser()
    rest, overrides = split_overrides(argv)
    args, unknown = parser.parse_known_args(rest)
    if not args.takes_overrides:
        unknown += [f"--config.{field}" for field in overrides]
    if unknown:
        raise CommandLineError(args.prog, f"unknown argument {unknown[0]!r}")
    missing = [field for field, value in overrides.items() if value is None]
    if missing:
        raise CommandLineError(args.prog, f"--config.{missing[0]} needs a value, e.g. --config.{missing[0]}=VALUE")
    args.overrides = overrides
    return args


def run(argv: Sequence[str]) -> int:
    """Runs the command line `argv` (without the program's name); its exit status. `--help` exits 0 (SystemExit)."""
    parser = build_parser()
    if not argv:
        print(parser.format_help(), file=sys.stderr)
        return EXIT_USAGE
    try:
        args = parse(argv, parser)
    except CommandLineError as error:
        if error.prog == parser.prog:
            print(parser.format_usage(), end="", file=sys.stderr)
            return report(error.prog, f"{error} (see podracer --help)")
        return report(error.prog, f"{error} (see {error.prog} --help)")
    return args.handler(args)


def main(argv: Sequence[str] | None = None) -> None:
    """The `podracer` command: runs `argv` (`sys.argv` by default; its first item is the program) and exits."""
    if argv is None:  # The command line itself, not a call from Python: restart once with huge pages.
        host_memory.restart_with_huge_pages()
    argv = list(sys.argv if argv is None else argv)
    sys.exit(run(argv[1:]))
