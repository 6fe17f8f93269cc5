"""Pictures of runs, for notebooks and the terminal: learning curves, throughput, and where Sebulba's time goes.

    result = podracer.train(config)
    podracer.plot.summary(result.history)                                  # one run
    podracer.plot.summary({"lr 1e-3": read_metrics("runs/a"), "lr 3e-4": read_metrics("runs/b")})
    podracer.plot.summary(population_result.history)                       # a population: members overlaid

A run is its log records: `TrainResult.history`, or `read_metrics(workdir)`
for a run that wrote `metrics.jsonl`; several runs are a mapping from label to
records, drawn over one another. `podracer plot WORKDIR ... --out FILE.png`
draws the same figure from a terminal. matplotlib is the `plot` extra
(`pip install -e '.[plot]'`), imported only here.

Statistics across seeds, the IQM and mean of several runs with bootstrap
confidence intervals, are `podracer.plot.aggregate` (its numbers computed by
rliable in `podracer.plot.bootstrap`, the `stats` extra).
"""

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from podracer.run.metrics_writer import MEMBERS, read_records

Records = Sequence[dict]
Runs = Records | Mapping[str, Records]

FIGURE_WIDTH_INCHES = 13.0
ROW_HEIGHT_INCHES = 3.4
MAX_LEGEND_ENTRIES = 12  # A bigger population's lines go unlabelled.
DPI = 100  # So a PNG of the summary is 1300 pixels wide and 340 pixels high per row of panels.

# Sebulba's time shares (podracer.sebulba.telemetry): fractions of each log window's wall-clock time.
ACTOR_SHARES = {
    "actor_env_share": "stepping environments",
    "actor_inference_share": "inference",
    "actor_compiled_share": "compiled rollouts (acting and stepping)",
    "actor_wait_share": "waiting (parameters, full queue)",
}
LEARNER_SHARES = {"learner_share": "learning", "learner_wait_share": "waiting for rollouts"}
_SHARE_COLOURS = {
    "actor_env_share": "tab:green",
    "actor_inference_share": "tab:blue",
    "actor_compiled_share": "tab:cyan",
    "actor_wait_share": "tab:orange",
    "learner_share": "tab:purple",
    "learner_wait_share": "tab:red",
}


class MetricsNotFound(FileNotFoundError):
    """A workdir that is missing or holds no log records; the message says which and what to pass instead."""


def read_metrics(workdir: str) -> list[dict]:
    """The log records of the run that wrote `workdir/metrics.jsonl`, in order; missing values become NaN.

    A last line cut short (the run was killed while writing it) is left out;
    raises `MetricsNotFound` for a missing workdir or one with no records.
    """
    if not os.path.isdir(workdir):
        raise MetricsNotFound(f"workdir {workdir!r} does not exist: pass the --workdir of a `podracer train` run")
    path = os.path.join(workdir, "metrics.jsonl")
    if not os.path.isfile(path):
        raise MetricsNotFound(
            f"{workdir!r} has no metrics.jsonl: pass the --workdir of a `podracer train` run "
            "(runs write metrics.jsonl there at each log record)"
        )
    records = read_records(path)
    if not records:
        raise MetricsNotFound(f"{path} has no records yet: the run stopped before its first log record")
    return records


def summary(runs: Runs, title: str | None = None) -> Any:
    """One figure of everything a run logged worth seeing, runs overlaid; returns the matplotlib `Figure`.

    Top row: mean episode return against environment steps and against wall
    time, and steps per second. Runs with Sebulba's telemetry get a second
    row: where the actor threads' and the learner's time went.
    """
    plt = pyplot()
    runs = as_runs(runs)
    with_shares = any(has_time_shares(records) for records in runs.values())
    rows = 2 if with_shares else 1
    figure = plt.figure(figsize=(FIGURE_WIDTH_INCHES, ROW_HEIGHT_INCHES * rows), dpi=DPI, layout="constrained")
    grid = figure.add_gridspec(rows, 3)
    learning_curve(runs, figure.add_subplot(grid[0, 0]), x="step")
    learning_curve(runs, figure.add_subplot(grid[0, 1]), x="wall_seconds")
    throughput(runs, figure.add_subplot(grid[0, 2]))
    if with_shares:
        time_shares(runs, figure.add_subplot(grid[1, :]))
    if title:
        figure.suptitle(title, fontsize="medium")
    return figure


def learning_curve(runs: Runs, ax: Any, x: str = "step") -> Any:
    """Mean episode return of each log window against `x`: "step" (environment steps) or "wall_seconds".

    A population's members are drawn one line each (`as_runs(..., members=True)`). Where a run evaluated
    itself, its evaluations' mean return is drawn dashed in the same colour, in a band of one standard error.
    """
    curves = as_runs(runs, members=True)
    for label, records in curves.items():
        (line,) = ax.plot(column(records, x), column(records, "mean_episode_return"), marker=".", label=label)
        evaluated = [record for record in records if "eval_mean_return" in record]
        if evaluated:  # Periodic evaluation (podracer.run.evaluation): its mean with a band of one standard error.
            xs, mean = column(evaluated, x), column(evaluated, "eval_mean_return")
            stderr = np.nan_to_num(column(evaluated, "eval_return_stderr"))
            ax.plot(xs, mean, linestyle="--", marker="s", color=line.get_color(), label=f"{label} (evaluation)")
            ax.fill_between(xs, mean - stderr, mean + stderr, color=line.get_color(), alpha=0.15)
    ax.set_xlabel({"step": "environment steps", "wall_seconds": "wall-clock seconds (compilation included)"}[x])
    ax.set_ylabel("mean episode return")
    ax.set_title("return against " + ("steps" if x == "step" else "wall time"))
    _finish(ax, curves)
    return ax


def throughput(runs: Runs, ax: Any) -> Any:
    """Environment steps per second of each log window (frames per second too where they differ, as on Atari)."""
    for label, records in as_runs(runs).items():
        (line,) = ax.plot(column(records, "step"), column(records, "steps_per_second"), marker=".", label=label)
        frames = column(records, "frames_per_second")
        if np.isfinite(frames).any() and not np.allclose(frames, column(records, "steps_per_second"), equal_nan=True):
            ax.plot(column(records, "step"), frames, linestyle="--", color=line.get_color(), label=f"{label} (frames)")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("per second")
    ax.set_title("steps per second")
    ax.set_ylim(bottom=0)
    _finish(ax, runs)
    return ax


def time_shares(runs: Runs, ax: Any) -> Any:
    """Where the time went, one pair of bars per run: an actor thread's and the learner's shares of the wall clock.

    Each share is averaged over the log windows, weighted by their length; the
    first window, which holds the actors' first inference compilations, is
    left out where there are others. What the bars leave to 1 is time spent
    elsewhere: copying, Python, logging. An actor's times are counted in the
    window whose update learned its rollout, so its bar can pass 1 a little.
    """
    runs = {label: records for label, records in as_runs(runs).items() if has_time_shares(records)}
    bars, longest = [], 1.0
    for label, records in runs.items():
        shares = mean_time_shares(records)
        bars += [(f"{label}: actor thread" if len(runs) > 1 else "actor thread", ACTOR_SHARES, shares)]
        bars += [(f"{label}: learner" if len(runs) > 1 else "learner", LEARNER_SHARES, shares)]
    for row, (_, fields, shares) in enumerate(reversed(bars)):
        left = 0.0
        for field, name in fields.items():
            if field not in shares:  # Logged before podracer had it (actor_compiled_share).
                continue
            ax.barh(row, shares[field], left=left, color=_SHARE_COLOURS[field], label=name)
            if shares[field] >= 0.06:
                ax.text(left + shares[field] / 2, row, f"{shares[field]:.0%}", ha="center", va="center", color="white")
            left += shares[field]
        longest = max(longest, left)
    ax.set_yticks(range(len(bars)), [name for name, _, _ in reversed(bars)])
    ax.set_xlim(0, longest)
    ax.set_xlabel("share of wall-clock time")
    ax.set_title("where the time goes (Sebulba)")
    handles = dict(zip(*reversed(ax.get_legend_handles_labels()), strict=True))  # One per share, actors' first.
    names = [name for name in (*ACTOR_SHARES.values(), *LEARNER_SHARES.values()) if name in handles]
    ax.legend([handles[name] for name in names], names, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    return ax


def frames(images: Sequence[Any], titles: Sequence[str] | None = None, columns: int | None = None) -> Any:
    """A strip (or grid) of pictures, e.g. the boards of an episode the agent played; returns the `Figure`.

    `images` are `[H, W]` or `[H, W, 3|4]` arrays; `titles` label each one.
    """
    plt = pyplot()
    columns = columns or len(images)
    rows = math.ceil(len(images) / columns)
    height, width = np.shape(images[0])[:2]
    panel_width = 1.4  # Inches; each panel keeps the pictures' aspect, plus room for its title.
    size = (panel_width * columns, (panel_width * height / width + 0.3) * rows)
    figure, axes = plt.subplots(rows, columns, figsize=size, squeeze=False, layout="constrained")
    for index, ax in enumerate(axes.ravel()):
        ax.set_axis_off()
        if index < len(images):
            ax.imshow(images[index], interpolation="nearest")
            if titles is not None:
                ax.set_title(titles[index], fontsize="small")
    return figure


def save(figure: Any, path: str, file_format: str | None = None) -> None:
    """Writes `figure` (in `file_format`, or the one the extension names: .png, .pdf, .svg) and closes it."""
    plt = pyplot()
    figure.savefig(path, dpi=DPI, format=file_format)
    plt.close(figure)


def as_runs(runs: Runs, members: bool = False) -> dict[str, Records]:
    """`runs` as a mapping from label to records: one run's records are labelled "run".

    With `members`, a population's run becomes one run per member, labelled
    "member I" (or "LABEL: member I" among several runs); a member's records
    carry its own episode statistics and losses, and the step and wall time of
    the population's record.
    """
    runs = dict(runs) if isinstance(runs, Mapping) else {"run": runs}
    if not members:
        return runs
    expanded = {}
    for label, records in runs.items():
        for member, member_records in member_runs(records).items() or [(None, records)]:
            name = label if member is None else f"member {member}" if len(runs) == 1 else f"{label}: member {member}"
            expanded[name] = member_records
    return expanded


def member_runs(records: Records) -> dict[int, list[dict]]:
    """A population's records as each member's own, `{member: records}`; empty for a single run."""
    runs: dict[int, list[dict]] = {}
    for record in records:
        for member in record.get(MEMBERS, ()):
            runs.setdefault(member["member"], []).append({**member, "wall_seconds": record.get("wall_seconds")})
    return runs


def column(records: Records, field: str) -> np.ndarray:
    """One field of every record, NaN where a record lacks it."""
    return np.array([_number(record.get(field)) for record in records], dtype=np.float64)


def has_time_shares(records: Records) -> bool:
    return any("actor_env_share" in record for record in records)


def mean_time_shares(records: Records) -> dict[str, float]:
    """Each time share logged averaged over the log windows, weighted by their length (`seconds`), the first left out."""
    windows = [record for record in records if "actor_env_share" in record]
    windows = windows[1:] or windows
    weights = column(windows, "seconds")
    logged = [field for field in _SHARE_COLOURS if field in windows[0]]
    return {field: float(np.average(column(windows, field), weights=weights)) for field in logged}


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _finish(ax: Any, runs: Runs) -> None:
    ax.grid(alpha=0.3)
    if 1 < len(as_runs(runs)) <= MAX_LEGEND_ENTRIES:
        ax.legend(fontsize="small")


def pyplot():
    """matplotlib's pyplot, or an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(
            "podracer.plot needs matplotlib: pip install -e '.[plot]' (or pip install matplotlib)"
        ) from error
    return plt
