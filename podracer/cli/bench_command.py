"""`podracer bench`: measure steady-state throughput, the Podracer paper's Figure 4, into a CSV, a table and figures.

The options are `podracer.bench.command_line`'s (the figures are listed
there, so `--help` names them without importing JAX); `podracer.bench.command`
measures. A bad argument, or `--devices` more than the machine has, exits 2
before anything runs; a measurement that failed exits 1 after the others
are written.
"""

import argparse
import sys

from podracer.bench import command_line
from podracer.cli.common import Commands, add_command, report, use_agg
from podracer.config.errors import UsageError


def register(commands: Commands) -> None:
    """Adds `podracer bench`."""
    parser = add_command(
        commands,
        "bench",
        bench,
        "measure steady-state throughput (Figure 4 of the Podracer paper) into a CSV, a table and figures",
        "Measure steady-state throughput, the figures of the Podracer paper's Figure 4 and more, each point in "
        "a fresh process, and write bench.csv, bench.md and a PNG per figure. Needs the plot extra (matplotlib).",
    )
    command_line.add_arguments(parser)


def bench(args: argparse.Namespace) -> int:
    """Measures what `args` asks for; the exit status."""
    try:
        options = command_line.options(args)
        use_agg()  # Before measuring for minutes, not after.
    except (UsageError, ImportError) as error:
        return report(args.prog, error)
    from podracer.bench import command  # Imports JAX.

    try:
        return command.run(options)
    except UsageError as error:  # What the machine cannot do, found before anything is written.
        return report(args.prog, error)
    except KeyboardInterrupt:
        print(f"{args.prog}: interrupted before the results were written", file=sys.stderr)
        return 130
