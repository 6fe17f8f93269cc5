"""The Sebulba learner: one thread running the replicated update over the learner devices.

Each update takes one rollout from every actor queue, always in the same order,
so the batch an update sees never depends on thread timing. The update is one
`jax.jit(jax.shard_map(...))` program over the learner mesh: every device
concatenates its shards of the rollouts along the batch axis, optionally splits
them into `learner_minibatches` sequential minibatch updates, and runs the
agent's `learn` (the same function Anakin calls), averaging gradients with
`lax.pmean`. The new parameters then go device-to-device to every actor device.
"""

import queue
import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec

from podracer.agents import Agent
from podracer.agents.learner import LearnerState
from podracer.metrics_writer import episode_summary
from podracer.sebulba.actor import Rollout
from podracer.sebulba.lifecycle import RunControl
from podracer.sebulba.parameters import ParameterServer
from podracer.topology import DEVICE_AXIS, REPLICATED

# Trajectory leaves are time-major, [T (+ 1), B, ...]: shard the batch axis over the learner devices.
TRAJECTORY_SPEC = PartitionSpec(None, DEVICE_AXIS)


def make_update(agent: Agent, mesh: Mesh, learner_minibatches: int) -> Callable:
    """`update(learner_state, trajectories, key) -> (learner_state, metrics)`, compiled for `mesh`.

    `trajectories` is a list with one trajectory per actor thread; the input
    state is donated.
    """

    def per_device(state: LearnerState, trajectories: list, key):
        batch = jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *trajectories)
        size = jax.tree.leaves(batch)[0].shape[1] // learner_minibatches
        metrics = []
        # A Python loop, not `lax.scan`: XLA:CPU runs convolution gradients inside a loop body
        # about 30x slower than at top level (IMPALA ResNet, measured), and the count is small.
        for index, minibatch_key in enumerate(jax.random.split(key, learner_minibatches)):
            minibatch = jax.tree.map(lambda x: x[:, index * size : (index + 1) * size], batch)
            state, minibatch_metrics = agent.learn(state, minibatch, minibatch_key)
            metrics.append(minibatch_metrics)
        return state, jax.tree.map(lambda *values: jnp.mean(jnp.stack(values)), *metrics)

    update = jax.shard_map(
        per_device, mesh=mesh, in_specs=(REPLICATED, TRAJECTORY_SPEC, REPLICATED), out_specs=(REPLICATED, REPLICATED)
    )
    return jax.jit(update, donate_argnums=0)


def run_learner(
    *,
    state: LearnerState,
    update: Callable,
    rollout_queues: list[queue.Queue],
    parameters: ParameterServer,
    control: RunControl,
    key,
    num_updates: int,
    log_every: int,
    log: Callable[[dict], None],
    result: list,
) -> None:
    """The body of the learner thread; appends the final learner state to `result`."""
    window = _Window()
    for version in range(1, num_updates + 1):
        start = time.perf_counter()
        queue_depth = sum(q.qsize() for q in rollout_queues)
        rollouts = [
            control.wait(lambda t, q=q: q.get(timeout=t), f"a rollout from actor thread {index}")
            for index, q in enumerate(rollout_queues)
        ]
        waited = time.perf_counter() - start

        start = time.perf_counter()
        state, metrics = update(state, [r.trajectory for r in rollouts], jax.random.fold_in(key, version))
        parameters.publish(version, state.params)
        metrics = jax.device_get(metrics)  # Waits for the update.
        window.add(metrics, rollouts, version, queue_depth, waited, time.perf_counter() - start)
        if version % log_every == 0 or version == num_updates:
            log(window.record(version))
            window = _Window()
    result.append(state)


class _Window:
    """Metrics and telemetry accumulated between two log records."""

    def __init__(self):
        self.start = time.perf_counter()
        self.metrics: list[dict] = []
        self.rollouts: list[Rollout] = []
        self.lags: list[int] = []
        self.queue_depths: list[int] = []
        self.learner_wait_seconds = 0.0
        self.learner_seconds = 0.0

    def add(self, metrics: dict, rollouts: list[Rollout], version: int, queue_depth: int, waited: float, learned: float):
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
        actor_share = lambda field: sum(getattr(r, field) for r in self.rollouts) / num_threads / seconds
        record = {
            "update": version,
            "updates": len(self.metrics),
            "seconds": seconds,
            **episode_summary(*_sum_over_processes([
                sum(r.episodes for r in self.rollouts),
                sum(r.episode_return_sum for r in self.rollouts),
                sum(r.episode_length_sum for r in self.rollouts),
            ])),
            "actor_env_share": actor_share("env_seconds"),
            "actor_inference_share": actor_share("inference_seconds"),
            "actor_wait_share": actor_share("wait_seconds"),
            "learner_share": self.learner_seconds / seconds,
            "learner_wait_share": self.learner_wait_seconds / seconds,
            "policy_lag": float(np.mean(self.lags)),
            "queue_depth": float(np.mean(self.queue_depths)),
        }
        record.update({name: float(np.mean([m[name] for m in self.metrics])) for name in self.metrics[0]})
        return record


def _sum_over_processes(values: list[float]) -> np.ndarray:
    """Totals over every process of the job (each saw only its own actors' episodes)."""
    values = np.asarray(values, np.float64)
    return multihost_utils.process_allgather(values).sum(axis=0) if jax.process_count() > 1 else values
