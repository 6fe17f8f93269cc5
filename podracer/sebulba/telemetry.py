"""Sebulba's telemetry: where the time of actors and learner went between two log records.

A window accumulates, update by update, the learner's metrics, the rollouts it
consumed (each with the episodes that ended in it and the parameter version
it acted with) and the queue depth, and turns them into one log record. Its
time shares come from each thread's `PhaseClock`, read when the window opens
and when it closes, so each is exactly the fraction of the window's wall time
that thread spent in that phase (`phase_clock.shares`): in [0, 1], summing to
at most 1 per thread, whatever was under way when the window opened. Actor
shares are the mean over the process's actor threads.
"""

from collections.abc import Sequence

import jax
import numpy as np
from jax.experimental import multihost_utils

from podracer.envs.episodes import Completed
from podracer.run.contract import episode_summary
from podracer.sebulba.actor import Rollout
from podracer.sebulba.phase_clock import PhaseClock, Reading, shares

# What an actor thread's time goes to: stepping host environments from Python, choosing actions from Python, a
# compiled rollout (acting and stepping together), and waiting for parameters or queue space.
ACTOR_PHASES = ("env", "inference", "compiled", "wait")
LEARNER_PHASES = ("learn", "wait")  # The learner: its update (and publishing its parameters), and waiting for rollouts.


class TelemetryWindow:
    """Metrics and telemetry accumulated between two log records."""

    def __init__(
        self, actor_clocks: Sequence[PhaseClock], learner_clock: PhaseClock, opened: list[Reading] | None = None
    ):
        """Opens a window now, or at `opened` (the readings that closed the previous one, so windows tile the run)."""
        self._clocks = [*actor_clocks, learner_clock]
        self._opened = opened or [clock.read() for clock in self._clocks]
        self._closed: list[Reading] = []
        self.metrics: list[dict] = []
        self.rollouts: list[Rollout] = []
        self.lags: list[int] = []
        self.queue_depths: list[int] = []

    def add(self, metrics: dict, rollouts: list[Rollout], version: int, queue_depth: int) -> None:
        """One update: its metrics, the rollouts it learned from and the rollouts waiting when it began."""
        self.metrics.append(metrics)
        self.rollouts += rollouts
        self.lags += [version - 1 - r.params_version for r in rollouts]
        self.queue_depths.append(queue_depth)

    def record(self, version: int) -> dict:
        """Closes the window: losses averaged over its updates, episodes pooled, each thread's time shares."""
        self._closed = [clock.read() for clock in self._clocks]
        *actors, learner = [shares(a, b) for a, b in zip(self._opened, self._closed, strict=True)]
        completed = np.sum([np.asarray(r.completed, np.float64) for r in self.rollouts], axis=0)
        record = {
            "update": version,
            "updates": len(self.metrics),
            "seconds": self._closed[-1].time - self._opened[-1].time,  # By the learner's clock.
            **episode_summary(Completed(*_sum_over_processes(completed))),
            **{f"actor_{phase}_share": float(np.mean([a[phase] for a in actors])) for phase in ACTOR_PHASES},
            "learner_share": learner["learn"],
            "learner_wait_share": learner["wait"],
            "policy_lag": float(np.mean(self.lags)),
            "queue_depth": float(np.mean(self.queue_depths)),
        }
        record.update({name: float(np.mean([m[name] for m in self.metrics])) for name in self.metrics[0]})
        return record

    def following(self) -> "TelemetryWindow":
        """The next window, opened where this one closed."""
        return TelemetryWindow(self._clocks[:-1], self._clocks[-1], self._closed)


def _sum_over_processes(values: np.ndarray) -> np.ndarray:
    """Totals over every process of the job (each saw only its own actors' episodes)."""
    return multihost_utils.process_allgather(values).sum(axis=0) if jax.process_count() > 1 else values
