"""The Sebulba learner: one thread running the replicated update over the learner devices.

Each update takes one rollout from every actor queue, always in the same order,
so the batch an update sees never depends on thread timing. The update is one
`jax.jit(jax.shard_map(...))` program over the learner mesh: every device
concatenates its shards of the rollouts along the batch axis, optionally splits
them into `learner_minibatches` sequential updates, and runs `agent.learn`
(the same function Anakin calls), which averages gradients over the device
axis. The new acting parameters then go device-to-device to every actor device.
"""

import queue
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from jax.sharding import Mesh, PartitionSpec

from podracer.agents import Agent
from podracer.sebulba.lifecycle import RunControl
from podracer.sebulba.parameter_versions import ParameterVersions
from podracer.sebulba.telemetry import TelemetryWindow
from podracer.topology import DEVICE_AXIS, REPLICATED

# Trajectory leaves are time-major, [T (+ 1), B, ...]: shard the batch axis over the learner devices.
TRAJECTORY_SPEC = PartitionSpec(None, DEVICE_AXIS)


@struct.dataclass
class SebulbaState:
    """The learner's side of a Sebulba run after `update` updates (what a callback sees)."""

    learner: Any  # The agent's learner state, replicated over the learner devices.
    update: int  # Updates done; the acting parameters of this version are published.


def make_learner_update(agent: Agent, mesh: Mesh, learner_minibatches: int) -> Callable:
    """`update(learner_state, trajectories, key) -> (learner_state, metrics)`, jitted for `mesh`.

    `trajectories` is a list with one trajectory per actor thread; the input
    state is donated.
    """

    def per_device(state: Any, trajectories: list, key):
        batch = jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *trajectories)
        size = jax.tree.leaves(batch)[0].shape[1] // learner_minibatches
        metrics = []
        # A Python loop, not `lax.scan`: XLA:CPU runs convolution gradients inside a loop body
        # about 30x slower than at top level (IMPALA ResNet, measured), and the count is small.
        for index, minibatch_key in enumerate(jax.random.split(key, learner_minibatches)):
            minibatch = jax.tree.map(lambda x: x[:, index * size : (index + 1) * size], batch)
            state, minibatch_metrics = agent.learn(state, minibatch, minibatch_key, DEVICE_AXIS)
            metrics.append(minibatch_metrics)
        return state, jax.tree.map(lambda *values: jnp.mean(jnp.stack(values)), *metrics)

    update = jax.shard_map(
        per_device, mesh=mesh, in_specs=(REPLICATED, TRAJECTORY_SPEC, REPLICATED), out_specs=(REPLICATED, REPLICATED)
    )
    return jax.jit(update, donate_argnums=0)


def run_learner(
    *,
    state: Any,
    update: Callable,
    acting_params: Callable,
    rollout_queues: list[queue.Queue],
    parameters: ParameterVersions,
    control: RunControl,
    key,
    num_updates: int,
    log_every: int,
    report: Callable[[dict, SebulbaState], None],
    result: list,
) -> None:
    """The body of the learner thread; appends the final learner state to `result`.

    Every `log_every` updates (and after the last) it hands `report` the
    window's record and a copy of the state, which the next update does not
    touch (it donates its input).
    """
    window = TelemetryWindow()
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
        parameters.publish(version, acting_params(state))
        metrics = jax.device_get(metrics)  # Waits for the update.
        window.add(metrics, rollouts, version, queue_depth, waited, time.perf_counter() - start)
        if version % log_every == 0 or version == num_updates:
            report(window.record(version), SebulbaState(jax.tree.map(jnp.copy, state), version))
            window = TelemetryWindow()
    result.append(state)
