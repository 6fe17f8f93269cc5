"""Figures of tuning: a sweep's objective against each field it searched, and a PBT run's lineages.

    figure = tuning_figures.objective_against_fields(rows, ["optimizer.learning_rate"], "mean_episode_return")
    figure = tuning_figures.lineage(podracer.plot.read_metrics("runs/pbt"))    # podracer plot --pbt

A sweep's rows are `podracer.tuning.sweep_results.table`'s (`trials.csv`);
a PBT run's records are its `metrics.jsonl`, whose member lines carry each
member's hyperparameters and `parent` (`podracer.anakin.exploit_explore`).
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from podracer.plot import DPI, FIGURE_WIDTH_INCHES, MAX_LEGEND_ENTRIES, ROW_HEIGHT_INCHES, member_runs, pyplot
from podracer.run.metrics_writer import PARENT

STATE_MARKERS = {"complete": ("o", 1.0), "pruned": ("x", 0.5)}  # Failed trials have no objective to draw.


def objective_against_fields(
    rows: Sequence[dict], fields: Sequence[str], metric: str, log_fields: Sequence[str] = ()
) -> Any:
    """One panel per field: each finished trial's objective against its value there (choices by their text)."""
    figure, axes = panels(len(fields))
    for ax, field in zip(axes.flat, fields, strict=False):
        for state, (marker, alpha) in STATE_MARKERS.items():
            drawn = [row for row in rows if row["state"] == state and row["value"] is not None]
            xs = [row[field] for row in drawn]
            ax.scatter(xs, [row["value"] for row in drawn], marker=marker, alpha=alpha, label=f"{state} trials")
        if field in log_fields:
            ax.set_xscale("log")
        ax.set_xlabel(field)
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize="small")
    figure.suptitle(f"{len(rows)} trials", fontsize="medium")
    return figure


def lineage(records: Sequence[dict]) -> Any:
    """A PBT run: each hyperparameter of each member against steps (a panel per field), and the members' returns,
    with a grey line wherever a member took another's state, from the parent's point to the child's."""
    members = member_runs(records)
    fields = hyperparameter_fields(next(iter(members.values()))) + ["mean_episode_return"]
    figure, axes = panels(len(fields))
    for ax, field in zip(axes.flat, fields, strict=False):
        for member, member_records in members.items():
            steps = np.array([record["step"] for record in member_records], np.float64)
            values = np.array([record.get(field, np.nan) for record in member_records], np.float64)
            ax.plot(steps, values, drawstyle="steps-pre", label=f"member {member}")  # A value holds up to its step.
            for index, record in enumerate(member_records[:-1]):
                parent = record.get(PARENT, member)
                if parent != member:  # The copy takes effect from the next record on.
                    parent_value = members[parent][index].get(field, np.nan)
                    ax.plot([steps[index]] * 2, [parent_value, values[index + 1]], color="grey", alpha=0.6, lw=0.8)
        ax.set_xlabel("environment steps (each member's)")
        ax.set_ylabel(field)
        if field != "mean_episode_return" and np.nanmin([r.get(field, np.nan) for r in records_of(members)]) > 0:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    if len(members) <= MAX_LEGEND_ENTRIES:
        axes.flat[0].legend(fontsize="small")
    return figure


def panels(count: int) -> tuple[Any, Any]:
    """A figure of `count` panels, three to a row, and its axes (`[rows, 3]`; those past `count` hidden)."""
    columns = min(count, 3)
    rows = -(-count // columns)
    size = (FIGURE_WIDTH_INCHES, ROW_HEIGHT_INCHES * rows)
    figure, axes = pyplot().subplots(rows, columns, figsize=size, dpi=DPI, squeeze=False, layout="constrained")
    for ax in list(axes.flat)[count:]:
        ax.set_visible(False)
    return figure, axes


def hyperparameter_fields(member_records: Sequence[dict]) -> list[str]:
    """The fields a PBT member's records carry beyond its episodes and losses: its hyperparameters, the only
    dotted names among them."""
    return [name for name in member_records[0] if "." in name]


def records_of(members: dict[int, list[dict]]) -> list[dict]:
    return [record for member_records in members.values() for record in member_records]
