"""`podracer plot`: draw the learning curves, throughput and time shares of runs, overlaid, into one image.

The figure is `podracer.plot.summary`'s, of each workdir's `metrics.jsonl`.
A missing workdir, one without `metrics.jsonl`, or an `--out` that is not a
.png, .pdf or .svg file in an existing folder exits 2 with nothing written;
the image is written whole or not at all.
"""

import argparse
import os
from collections.abc import Sequence

from podracer.cli.common import Commands, add_command, report, use_agg
from podracer.config.errors import UsageError, count
from podracer.run.whole_files import written_whole

PLOT_FORMATS = (".png", ".pdf", ".svg")


def register(commands: Commands) -> None:
    """Adds `podracer plot`."""
    parser = add_command(
        commands,
        "plot",
        plot,
        "draw the learning curves, throughput and time shares of runs (their workdirs), overlaid",
        "Draw the learning curves, throughput and time shares of runs into one image, the runs overlaid and "
        "labelled by folder name. Needs the plot extra (matplotlib).",
    )
    parser.add_argument("workdirs", nargs="+", metavar="WORKDIR", help="the --workdir of a podracer train run")
    parser.add_argument(
        "--out", required=True, metavar="FILE", help=f"the image to write, a {', '.join(PLOT_FORMATS)} file"
    )
    parser.add_argument("--title", metavar="TEXT", help="the figure's title")
    parser.add_argument(
        "--aggregate",
        action="store_true",
        help="the runs as seeds: IQM and mean with bootstrap confidence intervals, printed and drawn (stats extra)",
    )
    parser.add_argument(
        "--pbt",
        action="store_true",
        help="a population-based training run: each member's hyperparameters and return, and who copied whom",
    )


def plot(args: argparse.Namespace) -> int:
    """Draws the runs of `args.workdirs` into `args.out`; the exit status."""
    try:
        check_out(args.out)
    except UsageError as error:
        return report(args.prog, error)
    from podracer import plot as plot_lib  # numpy only; matplotlib is imported when drawing.

    try:
        use_agg()
        figure, what = _aggregate(args) if args.aggregate else _lineage(args) if args.pbt else _summary(args)
    except (OSError, ValueError, ImportError) as error:
        return report(args.prog, error)
    with written_whole(args.out) as partial:  # A reader never sees half an image.
        plot_lib.save(figure, partial, file_format=os.path.splitext(args.out)[1][1:].lower())
    print(f"wrote {args.out}: {what}")
    return 0


def check_out(out: str) -> None:
    """`UsageError` unless `out` names a .png, .pdf or .svg file in a folder that exists."""
    if os.path.splitext(out)[1].lower() not in PLOT_FORMATS:
        raise UsageError(f"--out {out!r}: name a {', '.join(PLOT_FORMATS)} file")
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise UsageError(f"--out {out!r}: its folder does not exist; create it or choose another")


def _labels(workdirs: Sequence[str]) -> list[str]:
    """Each workdir's folder name, or its whole path where two folder names are the same."""
    names = [os.path.basename(os.path.normpath(workdir)) for workdir in workdirs]
    return names if len(set(names)) == len(names) else [os.path.normpath(workdir) for workdir in workdirs]


def _summary(args: argparse.Namespace) -> tuple:
    """`podracer.plot.summary` of the runs, each labelled by its folder, and what it drew in words."""
    from podracer import plot as plot_lib

    runs = {
        label: plot_lib.read_metrics(path) for label, path in zip(_labels(args.workdirs), args.workdirs, strict=True)
    }
    records = sum(len(history) for history in runs.values())
    return plot_lib.summary(runs, title=args.title), f"{count(len(runs), 'run')}, {records} log records"


def _aggregate(args: argparse.Namespace) -> tuple:
    """The runs' statistics across seeds (`podracer.plot.aggregate`), printed as a table and drawn; what it drew."""
    from podracer.plot import aggregate

    groups = aggregate.statistics(args.workdirs)
    print(aggregate.table(groups))
    runs = sum(len(group.scores) for group in groups)
    return aggregate.figure(groups, title=args.title), f"{count(len(groups), 'group')} of {count(runs, 'run')}"


def _lineage(args: argparse.Namespace) -> tuple:
    """`podracer.plot.tuning_figures.lineage` of one PBT run, and what it drew in words."""
    from podracer.plot import read_metrics, tuning_figures
    from podracer.run.metrics_writer import MEMBERS, PARENT

    if len(args.workdirs) != 1:
        raise UsageError(f"--pbt draws one run; got {len(args.workdirs)} workdirs")
    records = read_metrics(args.workdirs[0])
    if not any(PARENT in member for record in records for member in record.get(MEMBERS, ())):
        raise UsageError(f"{args.workdirs[0]!r} is no PBT run: its members carry no parent (population.pbt)")
    return tuning_figures.lineage(records), f"the lineage of {count(len(records[-1][MEMBERS]), 'member')}"
