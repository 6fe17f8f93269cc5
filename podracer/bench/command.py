"""`podracer bench`: measure the Podracer paper's Figure 4 on this machine, and write a CSV, a table and figures.

The points of each figure are planned (`anakin_scaling`, `sebulba`,
`pipeline`, `suites`, `population`, `muzero`, `evaluation`, `meta_training`), measured in fresh processes
grouped by device setup (`launch`), and written to the `--out` folder:
bench.csv, bench.md and a PNG per figure. The options and their checks are
`command_line`'s, done before anything here runs.
"""

import os
import statistics
import time
from collections.abc import Mapping, Sequence

from podracer.bench import charts, launch, machine, report
from podracer.bench.command_line import CSV_NAME, Options
from podracer.bench.figures import (
    anakin_scaling,
    evaluation_cost,
    meta_training,
    muzero_scaling,
    pipeline,
    population_scaling,
    sebulba_scaling,
    suite_rates,
)
from podracer.bench.records import Point, Row, Setup
from podracer.bench.steady import Spread, spread
from podracer.config.errors import UsageError, count

MARKDOWN_NAME = "bench.md"
CACHE_ENV = "JAX_COMPILATION_CACHE_DIR"

# The plan of each of `command_line.FIGURES`, in the same order.
PLANS = {
    "4a": anakin_scaling.plan,
    "4b": sebulba_scaling.plan_actor_batch,
    "4c": sebulba_scaling.plan_scaling,
    "pipeline": pipeline.plan,
    "suites": suite_rates.plan,
    "population": population_scaling.plan,
    "muzero": muzero_scaling.plan,
    "evaluation": evaluation_cost.plan,
    "meta": meta_training.plan,
}


def run(options: Options) -> int:
    """Measures every point of `options.figures` and writes the results; 1 if any measurement failed, else 0.

    Raises `UsageError` (before anything is written) when `--devices` asks
    for more accelerators than there are.
    """
    devices = machine.probe()
    setup = plan_setup(options, devices)
    this_machine = machine.describe(devices)
    points = [point for figure in options.figures for point in PLANS[figure](setup)]
    env = compilation_cache_env(os.environ)
    print(
        f"podracer bench: {count(len(points), 'point')} of {', '.join(options.figures)}, {options.repeats} "
        f"repeats each, on {'forced CPU devices' if setup.forced_cpu else this_machine.accelerator}; "
        f"compilation cache {env.get(CACHE_ENV, os.environ.get(CACHE_ENV))}; results in {options.out}",
        flush=True,
    )
    os.makedirs(options.out, exist_ok=True)
    measured = measure(points, options.repeats, env)
    rows = [_row(point, measured[index]) for index, point in enumerate(points) if index in measured]
    rows = evaluation_cost.with_efficiency(pipeline.with_efficiency(anakin_scaling.with_efficiency(rows)))
    write(options.out, options.figures, rows, this_machine)
    return 0 if len(rows) == len(points) else 1


def plan_setup(options: Options, devices: machine.Devices) -> Setup:
    """The plans' `Setup`: forced CPU devices without an accelerator or with --cpu; at most --devices devices."""
    forced_cpu = options.cpu or devices.platform == "cpu"
    if options.devices is not None and not forced_cpu and options.devices > devices.count:
        raise UsageError(
            f"--devices {options.devices}: this machine has {devices.count} {devices.platform} devices "
            "(add --cpu to measure on forced CPU devices instead)"
        )
    default = (os.cpu_count() or 1) if forced_cpu else devices.count
    return Setup(options.quick, forced_cpu, options.devices or default, options.sebulba_env)


def measure(points: Sequence[Point], repeats: int, env: Mapping[str, str]) -> dict[int, dict]:
    """The results of the `points` measured, by their index; a process that failed leaves its points out.

    Each group of points with the same `Launch` is measured in one process
    (or pod), in the order of their first point; progress goes to stdout.
    """
    indices = {id(point): index for index, point in enumerate(points)}
    measured = {}
    for where, group in launch.by_launch(points).items():
        print(f"measuring {count(len(group), 'point')} in a {launch.describe(where)}", flush=True)
        started = time.perf_counter()
        try:
            results = launch.measure(where, group, repeats, env)
        except launch.MeasurementFailed as error:
            print(f"podracer bench: {error}; left out: {', '.join(p.label() for p in group)}", flush=True)
            continue
        print(f"  {time.perf_counter() - started:.0f} s, compilation and warm-up included:", flush=True)
        for point, result in zip(group, results, strict=True):
            measured[indices[id(point)]] = result
            print(f"  {point.label()}: {_rates(spread(result['rates']), result['unit'])}", flush=True)
    return measured


def write(out: str, figures: Sequence[str], rows: Sequence[Row], this_machine: machine.Machine) -> None:
    """bench.csv, bench.md and a PNG for each of `figures` with rows, into the folder `out`."""
    report.write_csv(os.path.join(out, CSV_NAME), rows, this_machine)
    with open(os.path.join(out, MARKDOWN_NAME), "w") as f:
        f.write(report.markdown(rows, this_machine))
    drawn = []
    for figure in figures:
        figure_rows = [row for row in rows if row.figure == figure]
        if figure_rows:
            drawn.append(charts.FILE_NAMES[figure])
            charts.draw(figure, figure_rows, os.path.join(out, drawn[-1]))
    print(
        f"wrote {out}: {CSV_NAME} and {MARKDOWN_NAME} ({count(len(rows), 'row')}), {', '.join(drawn) or 'no figures'}",
        flush=True,
    )


def compilation_cache_env(environ: Mapping[str, str]) -> dict:
    """The variables that give every measuring process one persistent compilation cache, unless `environ` has one.

    Compilation is left out of every rate, but on a small machine it is most
    of a benchmark's wall time: with the cache, repeats, points that share a
    program, and later benchmarks compile nothing again. The cache is
    `$XDG_CACHE_HOME/podracer/jax-compilation-cache` (~/.cache by default);
    JAX keys every program by everything that affects it, JAX's version included.
    """
    if CACHE_ENV in environ:
        return {}
    home = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return {
        CACHE_ENV: os.path.join(home, "podracer", "jax-compilation-cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }


def _row(point: Point, result: dict) -> Row:
    """The `Row` of `point` measured: its columns, the median and spread of its rates, their unit and platform."""
    rates = spread(result["rates"])
    return Row(
        figure=point.figure,
        sweep=point.sweep,
        benchmark=point.benchmark,
        platform=result["platform"],
        median=rates.median,
        min=rates.min,
        max=rates.max,
        repeats=len(result["rates"]),
        unit=result["unit"],
        eval_share=statistics.median(result["eval_shares"]) if "eval_shares" in result else None,
        **point.columns,
    )


def _rates(rates: Spread, unit: str) -> str:
    return f"{rates.median:,.0f} {unit} (min {rates.min:,.0f}, max {rates.max:,.0f})"
