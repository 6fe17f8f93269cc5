"""Sebulba's telemetry: where the time of actors and learner went between two log records.

A window accumulates, update by update, the learner's metrics, the rollouts it
consumed (each carrying its actor's time split and finished episodes), the
policy lag and the queue depth, and turns them into one log record whose
shares are fractions of the window's wall-clock time.
"""

import time

import jax
import numpy as np
from jax.experimental import multihost_utils

from podracer.envs.episodes import Completed
from podracer.run.contract import episode_summary
from podracer.sebulba.actor import Rollout


class TelemetryWindow:
    """Metrics and telemetry accumulated between two log records."""

    def __init__(self):
        self.start = time.perf_counter()
        self.metrics: list[dict] = []
        self.rollouts: list[Rollout] = []
        self.lags: list[int] = []
        self.queue_depths: list[int] = []
        self.learner_wait_seconds = 0.0
        self.learner_seconds = 0.0

    def add(
        self, metrics: dict, rollouts: list[Rollout], version: int, queue_depth: int, waited: float, learned: float
    ):
        """One update: its metrics, the rollouts it learned from, and how long it waited for them and learned."""
        self.metrics.append(metrics)
        self.rollouts += rollouts
        self.lags += [version - 1 - r.params_version for r in rollouts]
        self.queue_depths.append(queue_depth)
        self.learner_wait_seconds += waited
        self.learner_seconds += learned

    def record(self, version: int) -> dict:
        """One log record: losses averaged over the window's updates, episodes pooled, time shares of the wall clock."""
        seconds = time.perf_counter() - self.start
        num_threads = len(self.rollouts) / len(self.metrics)

        def actor_share(field: str) -> float:
            return sum(getattr(r, field) for r in self.rollouts) / num_threads / seconds

        completed = np.sum([np.asarray(r.completed, np.float64) for r in self.rollouts], axis=0)
        record = {
            "update": version,
            "updates": len(self.metrics),
            "seconds": seconds,
            **episode_summary(Completed(*_sum_over_processes(completed))),
            "actor_env_share": actor_share("env_seconds"),
            "actor_inference_share": actor_share("inference_seconds"),
            "actor_compiled_share": actor_share("compiled_seconds"),
            "actor_wait_share": actor_share("wait_seconds"),
            "learner_share": self.learner_seconds / seconds,
            "learner_wait_share": self.learner_wait_seconds / seconds,
            "policy_lag": float(np.mean(self.lags)),
            "queue_depth": float(np.mean(self.queue_depths)),
        }
        record.update({name: float(np.mean([m[name] for m in self.metrics])) for name in self.metrics[0]})
        return record


def _sum_over_processes(values: np.ndarray) -> np.ndarray:
    """Totals over every process of the job (each saw only its own actors' episodes)."""
    return multihost_utils.process_allgather(values).sum(axis=0) if jax.process_count() > 1 else values
