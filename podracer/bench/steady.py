"""Steady-state rates from a run's log records, compilation and warm-up left out, and their spread over repeats.

Anakin compiles before its first dispatch, but the first dispatch still pays
for warming up (first transfers, allocation), so its record is dropped and the
rate is the median over the others. Sebulba's first log windows hold the
actors' first inference compilations and the pipeline filling up, so the
first `warmup` windows are dropped and the rate is the frames of the rest over
their wall-clock time.
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
