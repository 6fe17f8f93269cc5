"""The stratified bootstrap of runs' scores, by rliable: point estimates and their confidence intervals.

Agarwal et al. (2021), "Deep Reinforcement Learning at the Edge of the
Statistical Precipice" (NeurIPS): with the few runs RL can afford, report
the interquartile mean (IQM) and the mean of the runs' scores, each with a
percentile confidence interval from the stratified bootstrap (runs
resampled with replacement within each task). Their `rliable` library (the
`stats` extra) computes both here, imported only when used.
"""

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np

DEFAULT_REPS = 2000  # Bootstrap resamples; the paper's figures used 50,000 (rliable's own default).
CONFIDENCE = 0.95
SEED = 0  # Of the resampling, so the same runs give the same intervals.


@dataclasses.dataclass(frozen=True)
class Interval:
    """A point estimate and its confidence interval, `[low, high]`."""

    point: float
    low: float
    high: float


def final_estimates(scores: np.ndarray, reps: int, confidence: float, seed: int) -> tuple[Interval, Interval]:
    """The IQM and the mean of `scores` `[runs, tasks]`, each with its stratified-bootstrap interval (rliable)."""
    library, metrics = rliable()

    def iqm_and_mean(x: np.ndarray) -> np.ndarray:
        return np.array([metrics.aggregate_iqm(x), metrics.aggregate_mean(x)])

    with numpy_seed(seed):
        points, intervals = library.get_interval_estimates(
            {"runs": scores}, iqm_and_mean, reps=reps, confidence_interval_size=confidence
        )
    (iqm, mean), (low, high) = points["runs"], intervals["runs"]
    return Interval(float(iqm), float(low[0]), float(high[0])), Interval(float(mean), float(low[1]), float(high[1]))


def curve_estimates(scores: np.ndarray, reps: int, confidence: float, seed: int) -> np.ndarray:
    """The IQM at each step of `scores` `[runs, tasks, steps]` and its interval's ends, `[3, steps]` (rliable).

    Each step's IQM is rliable's `aggregate_iqm` of that step's `[runs,
    tasks]` (the 25%-trimmed mean of them all), computed for every step at
    once. rliable resamples the runs of each step and task on their own, as
    for its sample-efficiency curves: the intervals are pointwise.
    """
    library, _ = rliable()
    from scipy.stats import trim_mean  # A dependency of rliable's.

    def iqm_per_step(x: np.ndarray) -> np.ndarray:
        return trim_mean(x.reshape(-1, x.shape[-1]), proportiontocut=0.25, axis=0)

    if not scores.shape[-1]:  # The runs' steps do not overlap.
        return np.empty((3, 0))
    with numpy_seed(seed):
        points, intervals = library.get_interval_estimates(
            {"runs": scores}, iqm_per_step, reps=reps, confidence_interval_size=confidence
        )
    return np.concatenate([points["runs"][None], intervals["runs"]])


@contextlib.contextmanager
def numpy_seed(seed: int) -> Iterator[None]:
    """NumPy's global generator seeded with `seed`, and put back as it was afterwards.

    rliable 1.2's stratified bootstrap draws its resamples from the global
    generator (`np.random.choice`), not from the `random_state` it accepts.
    """
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def rliable() -> tuple[Any, Any]:
    """rliable's `library` and `metrics` modules, or an ImportError that says how to install them."""
    try:
        from rliable import library, metrics
    except ImportError as error:
        raise ImportError(
            "aggregate statistics need rliable: pip install -e '.[stats]' (or pip install rliable)"
        ) from error
    return library, metrics
