"""The Sebulba learner: one thread running the replicated update over the learner devices.

Each update takes one rollout from every actor queue, always in the same order,
so the batch an update sees never depends on thread timing. The update is one
`jax.jit(jax.shard_map(...))` program over the learner mesh: every device
concatenates its shards of the rollouts along the batch axis, optionally splits
them into `learner_minibatches` sequential updates, and runs `agent.learn`
(the same function Anakin calls), which averages gradients over the device
axis. The new acting parameters then go device-to-device to every actor device.
"""

import dataclasses
import queue
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.sharding import Mesh, PartitionSpec

from podracer.agents import Agent
from podracer.devices import per_device
from podracer.devices.topology import DEVICE_AXIS, REPLICATED, per_device_program
from podracer.run import finite
from podracer.run.checkpoint_steps import agree
from podracer.sebulba.lifecycle import RunControl
from podracer.sebulba.parameter_versions import ParameterVersions
from podracer.sebulba.phase_clock import PhaseClock
from podracer.sebulba.telemetry import TelemetryWindow

# Trajectory leaves are time-major, [T (+ 1), B, ...]: shard the batch axis over the learner devices.
TRAJECTORY_SPEC = PartitionSpec(None, DEVICE_AXIS)


@struct.dataclass
class SebulbaState:
    """The learner's side of a Sebulba run after `update` updates (what a callback sees)."""

    learner: Any  # The agent's learner state, replicated over the learner devices (PerDevice parts: [D, ...]).
    update: int  # Updates done; the acting parameters of this version are published.


def make_learner_update(agent: Agent, mesh: Mesh, learner_minibatches: int, check_finite: bool) -> Callable:
    """`update(learner_state, trajectories, key) -> (learner_state, (metrics, finite))`, jitted for `mesh`.

    `trajectories` is a list with one trajectory per actor thread; the input
    state is donated. With `check_finite`, `finite` says whether each leaf of
    the new state is finite (`podracer.run.finite.leaf_flags`); it is empty without.
    """

    def on_device(state: Any, trajectories: list, key):
        state = per_device.local(state)
        batch = jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *trajectories)
        size = jax.tree.leaves(batch)[0].shape[1] // learner_minibatches
        metrics = []
        # A Python loop, not `lax.scan`: XLA:CPU runs convolution gradients inside a loop body
        # about 30x slower than at top level (IMPALA ResNet, measured), and the count is small.
        for index, minibatch_key in enumerate(jax.random.split(key, learner_minibatches)):
            minibatch = jax.tree.map(lambda x: x[:, index * size : (index + 1) * size], batch)
            state, minibatch_metrics = agent.learn(state, minibatch, minibatch_key, DEVICE_AXIS)
            metrics.append(minibatch_metrics)
        metrics = jax.tree.map(lambda *values: jnp.mean(jnp.stack(values)), *metrics)
        flags = finite.leaf_flags(per_device.replicated_part(state)) if check_finite else {}
        return per_device.global_(state), (metrics, flags)

    def update(state: Any, trajectories: list, key):
        specs = per_device.partition_specs(state)
        in_specs, out_specs = (specs, TRAJECTORY_SPEC, REPLICATED), (specs, REPLICATED)
        return per_device_program(on_device, mesh, in_specs, out_specs)(state, trajectories, key)

    return jax.jit(update, donate_argnums=0)


@dataclasses.dataclass(frozen=True)
class LearnerLoop:
    """What the learner thread runs with: the compiled update, where rollouts come from and parameters go, and when
    it reports records and checkpoints (`run_learner`)."""

    update: Callable  # make_learner_update's: (state, trajectories, key) -> (state, (metrics, flags)).
    acting_params: Callable  # The agent's: learner state -> the parameters the actors act with.
    rollout_queues: list[queue.Queue]  # One per actor thread, read in this order.
    parameters: ParameterVersions  # Where each update's acting parameters are published.
    control: RunControl
    key: jax.Array  # Update v learns with fold_in(key, v).
    first_version: int  # The update count it starts from (a resumed checkpoint's).
    num_updates: int
    log_every: int  # Updates between two records.
    checkpoint_due: Callable[[int], bool]
    report: Callable[[dict | None, SebulbaState, bool], None]  # (record or None, state, whether to save it).
    clock: PhaseClock  # The learner's time.
    actor_clocks: Sequence[PhaseClock]  # The actors', for the records' time shares.


def run_learner(loop: LearnerLoop, state: Any, result: list) -> None:
    """The body of the learner thread: updates `first_version + 1` to `num_updates` of `state` (which the first
    update donates); appends the final state to `result`.

    After each update it checks the metrics and the state for non-finite
    values (`podracer.run.finite.check`, raising before the state can be saved).
    Every `log_every` updates (and after the last) it hands `report` the
    window's record; when a checkpoint is due, or a signal asked the run to
    stop, it hands `report` the state to save. Saves are the main thread's
    job (orbax runs there), so the learner goes on meanwhile: `report` gets a
    copy of the state, which the next update does not touch (it donates its
    input). After a signal's save it stops the run. The learner's time goes
    on `clock`; the log records' time shares read it and `actor_clocks`.
    """
    window = TelemetryWindow(loop.actor_clocks, loop.clock)
    for version in range(loop.first_version + 1, loop.num_updates + 1):
        version_key = jax.random.fold_in(loop.key, version)  # Dispatched before the wait, off the actors' path.
        queue_depth = sum(q.qsize() for q in loop.rollout_queues)
        loop.clock.enter("wait")
        rollouts = [
            loop.control.wait(lambda t, q=q: q.get(timeout=t), f"a rollout from actor thread {index}")
            for index, q in enumerate(loop.rollout_queues)
        ]
        loop.clock.enter("learn")
        state, (metrics, flags) = loop.update(state, [r.trajectory for r in rollouts], version_key)
        loop.parameters.publish(version, loop.acting_params(state))
        metrics, flags = jax.device_get((metrics, flags))  # Waits for the update.
        loop.clock.enter(None)
        finite.check(version, jax.tree.map(lambda value: np.reshape(value, (1,)), metrics), flags)
        window.add(metrics, rollouts, version, queue_depth)
        save, stop, _ = agree(
            loop.checkpoint_due(version) or version == loop.num_updates, loop.control.stop_signal is not None
        )
        logs = version % loop.log_every == 0 or version == loop.num_updates
        if logs or save:
            loop.report(
                window.record(version) if logs else None, SebulbaState(jax.tree.map(jnp.copy, state), version), save
            )
        if logs:
            window = window.following()
        if stop:
            loop.control.stop.set()  # The actors stop; the main thread saves, then ends the run.
            return
    result.append(state)
