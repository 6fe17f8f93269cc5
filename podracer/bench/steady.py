"""Steady-state rates from a run's log records, compilation and warm-up left out, and their spread over repeats.

Anakin compiles before its first dispatch, but the first dispatch still pays
for warming up (first transfers, allocation), so its record is dropped and the
rate is the median over the others. Sebulba's first log windows hold the
actors' first inference compilations and the pipeline filling up, so the
first `warmup` windows are dropped and the rate is the frames of the rest over
their wall-clock time. `wall_rate` counts everything a run does between its
records, evaluations included, which the records' own rates leave out.
"""

import dataclasses
import statistics
from collections.abc import Sequence


@dataclasses.dataclass(frozen=True)
class Spread:
    """The median of some measurements, and the smallest and largest of them."""

    median: float
    min: float
    max: float


def spread(values: Sequence[float]) -> Spread:
    """The median, minimum and maximum of `values` (at least one)."""
    if not values:
        raise ValueError("no measurements to summarise")
    return Spread(statistics.median(values), min(values), max(values))


def anakin_rate(history: Sequence[dict]) -> float:
    """Median steps/s over the dispatches after the first (the only one, if there is just one)."""
    steady = history[1:] or history
    return statistics.median(record["steps_per_second"] for record in steady)


def sebulba_rate(history: Sequence[dict], warmup: int) -> float:
    """Frames/s over the log windows after the first `warmup`: their frames over their seconds."""
    steady = history[warmup:]
    if not steady:
        raise ValueError(f"a run of {len(history)} log records has none after the {warmup} warm-up updates")
    frames = sum(record["frames_per_second"] * record["seconds"] for record in steady)
    return frames / sum(record["seconds"] for record in steady)


def wall_rate(history: Sequence[dict], warmup: int) -> float:
    """Steps/s after the first `warmup` records and the first evaluation, over the wall time between records.

    A record's `steps_per_second` leaves out what the run does between its
    dispatches or log windows (an evaluation, by design); the time between
    records' `wall_seconds` counts it. The rate is over the whole span, not a
    median of each record's, since a median would leave out an evaluation
    made at every tenth record. The span starts at the first evaluation's
    record when that is later (and not the last): a program's first call pays
    a one-off cost, as the first dispatch does. A population's steps are each member's.
    """
    first, last = history[_start(history, warmup)], history[-1]
    return (last["step"] - first["step"]) / (last["wall_seconds"] - first["wall_seconds"])


def evaluation_share(history: Sequence[dict], warmup: int) -> float:
    """The share of `wall_rate`'s span that its evaluations took (their records' `eval_seconds`), within one run."""
    start = _start(history, warmup)
    spent = sum(record.get("eval_seconds", 0.0) for record in history[start + 1 :])
    return spent / (history[-1]["wall_seconds"] - history[start]["wall_seconds"])


def _start(history: Sequence[dict], warmup: int) -> int:
    """The index of the record whose wall time starts `wall_rate`'s span (which ends at the last record)."""
    if warmup < 1:
        raise ValueError(f"warmup {warmup}: the span starts at a record, so at least the first is left out")
    if len(history) <= warmup:
        raise ValueError(f"a run of {len(history)} log records has none after the {warmup} warm-up records")
    evaluated = [index + 1 for index, record in enumerate(history[:-1]) if "eval_seconds" in record]
    return max([warmup, *evaluated[:1]]) - 1
