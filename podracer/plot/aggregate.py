"""Statistics across seeds: the IQM and mean of runs' scores, with stratified-bootstrap confidence intervals.

    groups = podracer.plot.aggregate.statistics(["runs/seed0", "runs/seed1", "runs/seed2"])
    print(podracer.plot.aggregate.table(groups))
    podracer.plot.save(podracer.plot.aggregate.figure(groups), "runs/seeds.png")

A few runs of RL rarely agree, and their plain mean hides how much. Following
Agarwal et al. (2021), "Deep Reinforcement Learning at the Edge of the
Statistical Precipice" (NeurIPS), a set of runs is summarised by the
interquartile mean (IQM: the mean of the middle half of the runs' scores,
robust to one lucky or broken seed) and the mean, each with a 95% confidence
interval from the stratified bootstrap (runs resampled within each task),
both computed by their `rliable` library, the `stats` extra
(`podracer.plot.bootstrap`).

A run's score is the mean return of its last 100 episodes
(`podracer.run.contract.recent_return`), or of its last 100 evaluation
episodes where no training episode ends (a run that trains from a dataset);
at each logged step, the same up to that step, so the curve ends at the final
score. The runs are the workdirs
given, or a population's members (a workdir whose records hold `members`).
They are grouped by environment (`env.name` in each workdir's `config.json`)
and agent (`agent.name`, with a population's varied hyperparameters): returns
are raw, and returns of different environments are not on one scale, so each
environment is aggregated alone, as a task of its own. The runs of a group
are taken as seeds of one configuration: give runs that differ only in seed.
"""

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from ml_collections import ConfigDict

from podracer.config import population
from podracer.plot import (
    DPI,
    FIGURE_WIDTH_INCHES,
    ROW_HEIGHT_INCHES,
    MetricsNotFound,
    column,
    member_runs,
    pyplot,
    read_metrics,
)
from podracer.plot.bootstrap import CONFIDENCE, DEFAULT_REPS, SEED, Interval, curve_estimates, final_estimates, rliable
from podracer.run.contract import recent_return

MIN_RUNS = 2  # A bootstrap of one run would draw an interval of zero width around it.
SCORE = "mean return of the last 100 episodes"


@dataclasses.dataclass(frozen=True)
class Group:
    """The runs of one agent on one environment (a task), and their aggregate statistics."""

    task: str  # The environment, config.env.name.
    label: str  # The agent, and a population member's varied hyperparameters.
    runs: tuple[str, ...]  # Where each run came from: its workdir, or "WORKDIR member I".
    scores: np.ndarray  # [runs]: each run's final score.
    iqm: Interval
    mean: Interval
    steps: np.ndarray  # [S]: the environment steps the curve is drawn at.
    curve: np.ndarray  # [3, S]: the runs' IQM at each step, and its interval's low and high ends.
    confidence: float  # The intervals' coverage, 0.95 for 95%.


def statistics(
    workdirs: Sequence[str], reps: int = DEFAULT_REPS, confidence: float = CONFIDENCE, seed: int = SEED
) -> list[Group]:
    """The IQM and mean of the final scores, and the IQM curve, of each group of runs in `workdirs`.

    Raises `ImportError` (with how to install it) without rliable,
    `MetricsNotFound` for a workdir without records or `config.json`, and
    `ValueError` for a group with fewer than two runs or a run in which no
    episode ended.
    """
    rliable()
    if not workdirs:
        raise ValueError(f"give the workdirs of at least {MIN_RUNS} runs, or a population's workdir")
    groups = []
    for (task, label), runs in load(workdirs).items():
        if len(runs) < MIN_RUNS:
            raise ValueError(
                f"{label} on {task} has {len(runs)} run ({', '.join(runs)}): a confidence interval needs at least "
                f"{MIN_RUNS}; give the workdirs of more seeds, or a population of seeds (config.population.seed)"
            )
        curves = {source: score_curve(records) for source, records in runs.items()}
        for source, (steps, _) in curves.items():
            if not len(steps):
                raise ValueError(f"{source}: no episode ended, so the run has no score; train it for longer")
        scores = np.array([values[-1] for _, values in curves.values()])
        iqm, mean = final_estimates(scores[:, None], reps, confidence, seed)
        steps, values = aligned(list(curves.values()))
        curve = curve_estimates(values[:, None, :], reps, confidence, seed)
        groups.append(Group(task, label, tuple(runs), scores, iqm, mean, steps, curve, confidence))
    return groups


def load(workdirs: Sequence[str]) -> dict[tuple[str, str], dict[str, list[dict]]]:
    """The runs of `workdirs` grouped by `(environment, agent)`: `{group: {run: records}}`.

    A population's workdir gives one run per member, labelled with the
    hyperparameters its members vary (the seed aside).
    """
    groups: dict[tuple[str, str], dict[str, list[dict]]] = {}
    for workdir in workdirs:
        records = read_metrics(workdir)
        config = read_config(workdir)
        task, agent = config.get("env", {}).get("name", "?"), config.get("agent", {}).get("name", "?")
        members = member_runs(records)
        if not members:
            groups.setdefault((task, agent), {})[workdir] = records
        varied = {field: column for field, column in population.values(config).items() if field != "seed"}
        for member, member_records in members.items():
            label = " ".join([agent, *(f"{field}={column[member]:g}" for field, column in varied.items())])
            groups.setdefault((task, label), {})[f"{workdir} member {member}"] = member_records
    return groups


def read_config(workdir: str) -> ConfigDict:
    """The resolved config a run wrote to `workdir/config.json`."""
    path = os.path.join(workdir, "config.json")
    if not os.path.isfile(path):
        raise MetricsNotFound(f"{workdir!r} has no config.json, which says the run's environment: pass a run's workdir")
    with open(path) as f:
        return ConfigDict(json.load(f))


def score_curve(records: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """`(steps, scores)`: at each record, the mean return of the last 100 episodes up to it.

    Records before the first episode ended have no score and are left out. A
    run in which no training episode ends (one that trains from a dataset) is
    scored by its evaluations' episodes instead (`eval_mean_return`).
    """
    steps = column(records, "step")
    evaluated = not any(record.get("episodes") for record in records)
    scores = np.array([recent_return(records[: index + 1], evaluated=evaluated) for index in range(len(records))])
    kept = np.isfinite(scores) & np.isfinite(steps)
    return steps[kept], scores[kept]


def aligned(curves: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Runs' curves on common steps: `(steps [S], scores [runs, S])`.

    Runs logged at the same steps (seeds of one config, a population's
    members) keep them; otherwise each run is interpolated linearly onto every
    step any run logged, within the span all of them cover (none is
    extrapolated).
    """
    first = curves[0][0]
    if all(np.array_equal(steps, first) for steps, _ in curves):
        return first, np.stack([scores for _, scores in curves])
    start, end = max(steps[0] for steps, _ in curves), min(steps[-1] for steps, _ in curves)
    grid = np.unique(np.concatenate([steps for steps, _ in curves]))
    grid = grid[(grid >= start) & (grid <= end)]
    return grid, np.stack([np.interp(grid, steps, scores) for steps, scores in curves])


def figure(groups: Sequence[Group], title: str | None = None) -> Any:
    """One row per environment: the runs' IQM against steps with its interval as a band, and the final scores'
    IQM and mean with their intervals; returns the matplotlib `Figure`."""
    plt = pyplot()
    tasks = list(dict.fromkeys(group.task for group in groups))
    size = (FIGURE_WIDTH_INCHES, ROW_HEIGHT_INCHES * len(tasks) + 0.4)
    figure, axes = plt.subplots(
        len(tasks), 2, figsize=size, dpi=DPI, squeeze=False, width_ratios=(2, 1), layout="constrained"
    )
    for (curve_ax, final_ax), task in zip(axes, tasks, strict=True):
        in_task = [group for group in groups if group.task == task]
        iqm_curves(in_task, curve_ax)
        final_scores(in_task, final_ax)
    heading = "" if title is None else f"{title}\n"
    figure.suptitle(
        f"{heading}IQM: interquartile mean over runs; bands and bars: {groups[0].confidence:.0%} stratified-bootstrap "
        "confidence intervals (rliable, Agarwal et al. 2021); raw returns, each environment on its own",
        fontsize="medium",
    )
    return figure


def iqm_curves(groups: Sequence[Group], ax: Any) -> Any:
    """Each group's IQM of the runs' scores against environment steps, its confidence interval a band."""
    for index, group in enumerate(groups):
        label = f"{group.label} ({len(group.runs)} runs)"
        ax.plot(group.steps, group.curve[0], color=f"C{index}", label=label)
        ax.fill_between(group.steps, group.curve[1], group.curve[2], color=f"C{index}", alpha=0.25)
    ax.set_xlabel("environment steps")
    ax.set_ylabel(f"IQM of the runs' {SCORE}", fontsize="small")
    ax.set_title(f"{groups[0].task}: IQM with its {groups[0].confidence:.0%} CI")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return ax


def final_scores(groups: Sequence[Group], ax: Any) -> Any:
    """Each group's final IQM and mean with their confidence intervals as bars, over the runs' own scores."""
    for row, group in enumerate(groups):
        colour = f"C{row}"
        for offset, estimate, name, marker in ((-0.15, group.iqm, "IQM", "o"), (0.15, group.mean, "mean", "s")):
            error = [[estimate.point - estimate.low], [estimate.high - estimate.point]]
            label = name if row == 0 else None  # One legend entry per kind of mark.
            ax.errorbar(estimate.point, row + offset, xerr=error, fmt=marker, color=colour, capsize=4, label=label)
        ax.scatter(
            group.scores, np.full(len(group.scores), row), marker="|", color="grey", label="runs" if row == 0 else None
        )
    ax.set_yticks(range(len(groups)), [group.label for group in groups])
    ax.set_xlabel(SCORE)
    ax.set_title(f"final scores, with {groups[0].confidence:.0%} CIs")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3, axis="x")
    ax.set_ylim(-0.6, len(groups) - 0.4)
    ax.invert_yaxis()
    return ax


def table(groups: Sequence[Group]) -> str:
    """The final scores' statistics as aligned text, one line per group, for a terminal."""
    ci = f"{groups[0].confidence:.0%} CI" if groups else "CI"
    header = ("environment", "agent", "runs", f"IQM [{ci}]", f"mean [{ci}]")
    rows = [header] + [
        (g.task, g.label, str(len(g.runs)), _interval_text(g.iqm), _interval_text(g.mean)) for g in groups
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    note = f"score: {SCORE}, raw returns, each environment on its own"
    return "\n".join([*(line.rstrip() for line in lines), note])


def _interval_text(interval: Interval) -> str:
    return f"{interval.point:.4g} [{interval.low:.4g}, {interval.high:.4g}]"
