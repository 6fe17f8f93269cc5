"""The figures of a benchmark, one PNG each: what `podracer bench` measured, drawn from its rows.

Every point is its median with a bar from the smallest to the largest
repetition. 4a, 4c's replicas, the population's and meta-training's totals also
draw linear scaling from their first point (dashed); the evaluation figure writes each
frequency's cost against no evaluation over its bar. matplotlib comes through
`podracer.plot` (the `plot` extra).
"""

from collections.abc import Callable, Sequence
from typing import Any

from podracer import plot
from podracer.bench.figures.evaluation_cost import cost
from podracer.bench.figures.population_scaling import per_member
from podracer.bench.records import Row
from podracer.bench.steady import Spread
from podracer.config.errors import count

FILE_NAMES = {
    "4a": "fig4a.png",
    "4b": "fig4b.png",
    "4c": "fig4c.png",
    "pipeline": "pipeline.png",
    "suites": "suites.png",
    "population": "population.png",
    "muzero": "muzero.png",
    "evaluation": "evaluation.png",
    "meta": "meta.png",
}
PANEL_INCHES = (5.5, 4.0)


def anakin_scaling(rows: Sequence[Row]) -> Any:
    """Figure 4a: steps/s against devices for each benchmark, with linear scaling; and the scaling efficiency."""
    figure, (rates, efficiency) = _panels(2)
    for benchmark in _unique(row.benchmark for row in rows):
        points = sorted((row for row in rows if row.benchmark == benchmark), key=lambda row: row.devices)
        devices = [row.devices for row in points]
        line = _errorbar(rates, devices, points, label=benchmark)
        if points[0].devices == 1:
            rates.plot(devices, [points[0].median * n for n in devices], "--", color=line[0].get_color(), alpha=0.5)
        efficiency.plot(devices, [row.efficiency for row in points], marker="o", label=benchmark)
    counts = sorted({row.devices for row in rows})
    for ax in (rates, efficiency):
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts, [str(n) for n in counts])
        ax.minorticks_off()
        ax.set_xlabel("devices (batch per device fixed)")
    rates.set_yscale("log")
    rates.set_ylabel(rows[0].unit)
    rates.set_title("Anakin: throughput (dashed: linear)")
    efficiency.axhline(1.0, color="grey", linewidth=0.8)
    efficiency.set_ylim(0, 1.2)
    efficiency.set_ylabel("FPS(n) / (n FPS(1))")
    efficiency.set_title("scaling efficiency")
    return _finish(figure, f"Figure 4a: Anakin scaling ({_platforms(rows)})")


def actor_batch(rows: Sequence[Row]) -> Any:
    """Figure 4b: frames/s against environments per actor thread, one line per unroll length."""
    figure, (ax,) = _panels(1)
    for unroll in sorted({row.unroll_length for row in rows}):
        points = sorted((row for row in rows if row.unroll_length == unroll), key=lambda row: row.envs_per_thread)
        _errorbar(ax, [row.envs_per_thread for row in points], points, label=f"unroll {unroll}")
    batches = sorted({row.envs_per_thread for row in rows})
    ax.set_xscale("log", base=2)
    ax.set_xticks(batches, [str(n) for n in batches])
    ax.minorticks_off()
    ax.set_xlabel(f"environments per actor thread ({rows[0].actor_threads} threads)")
    ax.set_ylabel(rows[0].unit)
    ax.set_ylim(bottom=0)
    return _finish(figure, f"Figure 4b: Sebulba actor batch, {_subject(rows)}")


def sebulba_scaling(rows: Sequence[Row]) -> Any:
    """Figure 4c: frames/s for each actor + learner split of the devices, and against replicas (with linear)."""
    splits, replicas = _scaling_rows(rows)
    figure, axes = _panels(int(bool(splits)) + int(bool(replicas)))
    _scaling_panels(axes, splits, replicas)
    return _finish(figure, f"Figure 4c: Sebulba scaling, {_subject(rows)}")


def muzero(rows: Sequence[Row]) -> Any:
    """MuZero on Sebulba: figure 4c's panels, and frames/s against the simulations per action."""
    splits, replicas = _scaling_rows(rows)
    simulations = sorted((row for row in rows if row.sweep == "simulations"), key=lambda row: row.simulations)
    figure, axes = _panels(int(bool(splits)) + int(bool(replicas)) + int(bool(simulations)))
    _scaling_panels(axes[: len(axes) - int(bool(simulations))], splits, replicas)
    if simulations:
        ax = axes[-1]
        counts = [row.simulations for row in simulations]
        _errorbar(ax, counts, simulations, label=None)
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts, [str(n) for n in counts])
        ax.minorticks_off()
        ax.set_xlabel(f"simulations per action ({simulations[0].actor_devices} actor + 1 learner device)")
        ax.set_ylabel(simulations[0].unit)
        ax.set_ylim(bottom=0)
        ax.set_title("search cost")
    return _finish(figure, f"MuZero on Sebulba, {_subject(rows)}")


def _scaling_rows(rows: Sequence[Row]) -> tuple[list[Row], list[Row]]:
    splits = [row for row in rows if row.sweep == "device_split"]
    replicas = sorted((row for row in rows if row.sweep == "replicas"), key=lambda row: row.replicas)
    return splits, replicas


def _scaling_panels(axes: Sequence[Any], splits: Sequence[Row], replicas: Sequence[Row]) -> None:
    """The device-split panel (first axis) and the replicas panel (last), for those with rows."""
    if splits:
        ax = axes[0]
        labels = [f"{row.actor_devices}+{row.learner_devices}" for row in splits]
        _errorbar(ax, range(len(splits)), splits, label=None)
        ax.set_xticks(range(len(splits)), labels)
        ax.set_xlabel(f"actor + learner devices ({splits[0].platform})")
        ax.set_ylabel(splits[0].unit)
        ax.set_ylim(bottom=0)
        ax.set_title("device split")
    if replicas:
        ax = axes[-1]
        counts = [row.replicas for row in replicas]
        line = _errorbar(ax, counts, replicas, label=None)
        if counts[0] == 1:
            ax.plot(counts, [replicas[0].median * n for n in counts], "--", color=line[0].get_color(), alpha=0.5)
        ax.set_xticks(counts)
        ax.set_xlabel(f"replicas (local processes, {replicas[0].devices} CPU devices each)")
        ax.set_ylabel(f"{replicas[0].unit}, whole job")
        ax.set_ylim(bottom=0)
        ax.set_title("replicas (dashed: linear)")


def pipeline_efficiency(rows: Sequence[Row]) -> Any:
    """One panel per environment: envpool alone against Sebulba, with the pipeline efficiency over Sebulba's bar."""
    envs = _unique(row.env for row in rows)
    figure, axes = _panels(len(envs))
    for ax, env in zip(axes, envs, strict=True):
        points = [row for row in rows if row.env == env]
        labels = [
            "envpool alone" if row.network == "none" else f"Sebulba, {row.network}\n{row.env_stepping} stepping"
            for row in points
        ]
        _errorbar(ax, range(len(points)), points, label=None, bars=True)
        ax.set_xticks(range(len(points)), labels)
        for x, row in enumerate(points):
            if row.efficiency is not None:
                ax.annotate(f"{row.efficiency:.2f}", (x, row.median), ha="center", va="bottom")
        ax.set_ylabel(points[0].unit)
        ax.set_title(f"{env}, {points[0].actor_threads} threads x {points[0].envs_per_thread} envs")
    return _finish(figure, "Pipeline efficiency: Sebulba with a small network over envpool alone")


def suites(rows: Sequence[Row]) -> Any:
    """The named rows as horizontal bars (log scale), each labelled with its unit."""
    plt = plot.pyplot()
    figure, ax = plt.subplots(figsize=(PANEL_INCHES[0] * 2, 0.5 * len(rows) + 1.5), layout="constrained")
    ax.barh(range(len(rows)), [row.median for row in rows], color="tab:blue")
    lows = [row.median - row.min for row in rows]
    highs = [row.max - row.median for row in rows]
    ax.errorbar([row.median for row in rows], range(len(rows)), xerr=[lows, highs], fmt="none", color="black")
    ax.set_yticks(range(len(rows)), [f"{row.benchmark} ({row.unit})" for row in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("per second")
    return _finish(figure, f"Named rows ({_platforms(rows)})")


def population(rows: Sequence[Row]) -> Any:
    """Total steps/s against a population's members, with linear from the fewest; and each member's steps/s."""
    return _members(rows, f"Anakin populations, {_subject(rows)}")


def meta_training(rows: Sequence[Row]) -> Any:
    """LPG meta-training's inner steps/s against its members, with linear from the fewest; and each member's."""
    return _members(rows, f"LPG meta-training's inner environment steps, {_subject(rows)}")


def _members(rows: Sequence[Row], title: str) -> Any:
    """Total steps/s against the members, with linear scaling from the first point (dashed); and per member."""
    points = sorted(rows, key=lambda row: row.members)
    members = [row.members for row in points]
    figure, (total, each) = _panels(2)
    line = _errorbar(total, members, points, label=None)
    linear = [points[0].median * m / members[0] for m in members]
    total.plot(members, linear, "--", color=line[0].get_color(), alpha=0.5)
    _errorbar(each, members, [per_member(row) for row in points], label=None)
    for ax in (total, each):
        ax.set_xscale("log", base=2)
        ax.set_xticks(members, [str(m) for m in members])
        ax.minorticks_off()
        ax.set_xlabel(f"members ({points[0].num_envs} envs each, {count(points[0].devices, 'device')})")
        ax.set_yscale("log")
    total.set_ylabel(f"{points[0].unit}, all members")
    total.set_title("total (dashed: linear)")
    each.set_ylabel(f"{points[0].unit} per member")
    each.set_title("per member")
    return _finish(figure, title)


def evaluation_cost(rows: Sequence[Row]) -> Any:
    """A panel per benchmark: its rate without evaluation and evaluating every N records, each with its cost (and the
    share of time its evaluations took)."""
    benchmarks = _unique(row.benchmark for row in rows)
    figure, axes = _panels(len(benchmarks))
    for ax, benchmark in zip(axes, benchmarks, strict=True):
        points = sorted(
            (row for row in rows if row.benchmark == benchmark),
            key=lambda row: 1 / row.eval_every_records if row.eval_every_records else 0,
        )  # Off first, then ever more often.
        _errorbar(ax, range(len(points)), points, label=None, bars=True)
        ax.set_xticks(range(len(points)), [_how_often(row.eval_every_records) for row in points])
        for x, row in enumerate(points):
            if row.eval_every_records and row.efficiency is not None:
                share = "" if row.eval_share is None else f"\nevaluating {row.eval_share:.1%}"
                ax.annotate(cost(row) + share, (x, row.max), ha="center", va="bottom")
        ax.set_xlabel(f"evaluation ({points[0].devices} {points[0].platform} devices)")
        ax.set_ylim(0, 1.25 * max(row.max for row in points))  # Room for the costs.
        ax.set_ylabel(f"{points[0].unit}, over wall time")
        ax.set_title(f"{benchmark}: {points[0].env}, {points[0].network}")
    return _finish(figure, f"Periodic evaluation's cost on training throughput ({_platforms(rows)})")


def _how_often(every_records: int) -> str:
    return "off" if every_records == 0 else "every record" if every_records == 1 else f"every {every_records} records"


CHARTS: dict[str, Callable[[Sequence[Row]], Any]] = {
    "4a": anakin_scaling,
    "4b": actor_batch,
    "4c": sebulba_scaling,
    "pipeline": pipeline_efficiency,
    "suites": suites,
    "population": population,
    "muzero": muzero,
    "evaluation": evaluation_cost,
    "meta": meta_training,
}


def draw(figure_name: str, rows: Sequence[Row], path: str) -> None:
    """Draws the figure `figure_name` from its `rows` into the PNG file `path`."""
    plot.save(CHARTS[figure_name](rows), path, file_format="png")


def _panels(count: int) -> tuple[Any, list[Any]]:
    plt = plot.pyplot()
    width, height = PANEL_INCHES
    figure, axes = plt.subplots(1, count, figsize=(width * count, height), squeeze=False, layout="constrained")
    return figure, list(axes[0])


def _errorbar(ax: Any, xs: Sequence[float], rows: Sequence[Row | Spread], label: str | None, bars: bool = False) -> Any:
    """Medians at `xs` with bars from the smallest to the largest repetition; as columns with `bars`."""
    medians = [row.median for row in rows]
    spread = [[row.median - row.min for row in rows], [row.max - row.median for row in rows]]
    if bars:
        ax.bar(xs, medians, color="tab:blue", alpha=0.7)
        return ax.errorbar(xs, medians, yerr=spread, fmt="none", color="black", capsize=3)
    return ax.errorbar(xs, medians, yerr=spread, marker="o", capsize=3, label=label)


def _finish(figure: Any, title: str) -> Any:
    for ax in figure.axes:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[1]:
            ax.legend(fontsize="small")
    figure.suptitle(title, fontsize="medium")
    return figure


def _unique(values) -> list:
    return list(dict.fromkeys(values))


def _subject(rows: Sequence[Row]) -> str:
    return f"{rows[0].env}, {rows[0].network} ({_platforms(rows)})"


def _platforms(rows: Sequence[Row]) -> str:
    return "/".join(_unique(row.platform for row in rows))
