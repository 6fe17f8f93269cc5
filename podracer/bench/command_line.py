"""`podracer bench`'s options: the figures it can measure, the options' parser, their defaults and checks.

`add_arguments` declares the options on the `podracer bench` parser (which
`podracer.cli.bench_command` registers), and `options` turns what was parsed into
`Options`: the defaults that depend on `--quick` or on the time, and the
check that `--out` is a new folder. A bad argument is a `UsageError` and
nothing is written. This module imports no JAX, so that `podracer --help`
and a mistyped option answer at once; `command.PLANS` has a plan for each of
`FIGURES`, in the same order.
"""

import argparse
import dataclasses
import datetime
import os

from podracer.config.errors import UsageError

# Every figure `podracer bench` measures, in the order it measures them, with what each one shows.
FIGURES = {
    "4a": "Anakin's steps/s against devices, batch per device fixed",
    "4b": "Sebulba's frames/s against the actor batch and unroll length",
    "4c": "Sebulba's frames/s against the actor / learner device split and replicas",
    "pipeline": "Sebulba with a small network over envpool stepped alone",
    "suites": "the environment suites' configs and Pong's ResNet, one device each",
    "population": "Anakin's total steps/s against the members of a population",
    "muzero": "MuZero on Sebulba: devices, replicas and simulations",
    "evaluation": "training steps/s without periodic evaluation, and evaluating every 10 records and every record",
    "meta": "LPG meta-training's inner environment steps/s against the members of its population",
}
DEFAULT_FIGURES = ("4a", "4b", "4c", "pipeline")
SEBULBA_ENVS = ("pong", "cartpole")
DEFAULT_SEBULBA_ENV, QUICK_SEBULBA_ENV = "pong", "cartpole"
DEFAULT_REPEATS = 3
CSV_NAME = "bench.csv"


@dataclasses.dataclass(frozen=True)
class Options:
    """What the command line asks for."""

    figures: tuple[str, ...]  # Among FIGURES, in that order.
    repeats: int  # Runs per point: 3, or 1 with --quick, unless given.
    quick: bool  # Fewer points, shorter runs, CartPole for Sebulba unless --sebulba-env says otherwise.
    out: str  # The folder the results go to.
    cpu: bool  # Measure on forced CPU devices even where there is an accelerator.
    devices: int | None  # The most devices a point may use; None: the accelerators, or one per CPU core.
    sebulba_env: str  # pong or cartpole, for figures 4b and 4c.


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declares `podracer bench`'s options on `parser`; those left out parse as None (their defaults need `options`)."""
    listed = "; ".join(f"{name}: {what}" for name, what in FIGURES.items())
    parser.add_argument(
        "--figures",
        type=_figure_list,
        metavar="FIGURE,...",
        help=f"the figures to measure, comma-separated (default {','.join(DEFAULT_FIGURES)}). {listed}",
    )
    parser.add_argument(
        "--repeats", type=_positive, metavar="N", help=f"runs per point (default {DEFAULT_REPEATS}, 1 with --quick)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer points and shorter runs, CartPole for Sebulba: a check in minutes"
    )
    parser.add_argument(
        "--out", metavar="DIR", help="a new folder for bench.csv, bench.md and the figures (default runs/bench/TIME)"
    )
    parser.add_argument(
        "--cpu", action="store_true", help="measure on forced CPU devices even where there is an accelerator"
    )
    parser.add_argument(
        "--devices",
        type=_positive,
        metavar="N",
        help="the most devices a point may use (default: the accelerators, or one per CPU core)",
    )
    parser.add_argument(
        "--sebulba-env",
        choices=SEBULBA_ENVS,
        help=f"the environment of figures 4b and 4c (default {DEFAULT_SEBULBA_ENV}, {QUICK_SEBULBA_ENV} with --quick)",
    )


def options(args: argparse.Namespace, now: datetime.datetime | None = None) -> Options:
    """The `Options` of the parsed `args`, defaults filled in; `UsageError` for an `--out` that is not new."""
    now = now or datetime.datetime.now(datetime.UTC)
    out = args.out if args.out is not None else os.path.join("runs", "bench", now.strftime("%Y%m%dT%H%M%SZ"))
    if os.path.exists(os.path.join(out, CSV_NAME)) or (os.path.exists(out) and not os.path.isdir(out)):
        raise UsageError(f"--out {out!r} already holds results (or is a file): choose a new folder")
    return Options(
        figures=args.figures or DEFAULT_FIGURES,
        repeats=args.repeats or (1 if args.quick else DEFAULT_REPEATS),
        quick=args.quick,
        out=out,
        cpu=args.cpu,
        devices=args.devices,
        sebulba_env=args.sebulba_env or (QUICK_SEBULBA_ENV if args.quick else DEFAULT_SEBULBA_ENV),
    )


def _figure_list(text: str) -> tuple[str, ...]:
    """The figures a comma-separated `--figures` names, in `FIGURES` order."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names or any(name not in FIGURES for name in names):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of {','.join(FIGURES)}")
    return tuple(name for name in FIGURES if name in names)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value
