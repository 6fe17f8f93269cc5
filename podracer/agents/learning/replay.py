"""Replay on the device: flashbax trajectory buffers of timesteps, filled from trajectories, sampled as trajectories.

The buffer keeps one row per environment and appends each rollout's steps to
its environment's row, in order (flashbax's trajectory buffer, uniform or
prioritised, Schaul et al. 2016): item t of a row is the timestep an action
was chosen at and that action. A rollout's last timestep is the next
rollout's first, so each rollout adds its first T timesteps and the rows stay
unbroken across rollouts. Sampling draws sequences of `sequence_length`
consecutive items, handed back as a `Trajectory` (leaves `[L, S]` timesteps,
`[L - 1, S]` actions) that the agents' return and masking code reads as it
reads any trajectory: an n-step target is a sequence of n + 1 items, and an
episode that ends inside it is cut there (`trajectory.transitions`).

Items may also keep what acting returned beside the action (`extras`): a
search agent learns from its stored search policy and root value.

The buffer is the agent's, inside its learner state and on the devices; each
device holds its own (`podracer.devices.per_device.PerDevice`), filled by its own
environments, so its size and batch are per device.

`setup`, `init` and `make_learn` give an agent the whole replay loop: each
`learn` call adds its rollout, then, once the buffer holds enough, takes
`replay_ratio` gradient steps on sampled sequences. Where Sebulba's learner
splits each update's rollouts into `learner_minibatches` sequential `learn`
calls, every call holds a slice of the environments; rows must stay unbroken
per environment, so the calls stage their slices and the last one adds the
whole rollout, while every call still takes its gradient steps: N times the
updates per rollout, each sampling all the data held so far.
"""

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import flashbax
import jax
import jax.numpy as jnp
from flax import struct

from podracer.agents.trajectory import Trajectory
from podracer.config.errors import ConfigError
from podracer.devices import collectives
from podracer.devices.per_device import PerDevice
from podracer.envs.timestep import TimeStep


@dataclasses.dataclass(frozen=True)
class ReplaySettings:
    """A buffer's size and sampling: the replay fields of an agent that learns from one (`config.agent`'s)."""

    buffer_size: int = 10_000  # Items (agent steps) each device keeps, over all its environments.
    min_replay_size: int = 1_000  # Items each device holds before the first sampled update.
    batch_size: int = 128  # Sequences each device samples per gradient step.
    replay_ratio: int = 1  # Sampled gradient steps per `learn` call, i.e. per rollout added.
    prioritised: bool = False  # Sample in proportion to priority ** priority_exponent (Schaul et al. 2016).
    priority_exponent: float = 0.6  # alpha in the paper; 0 is uniform.
    importance_exponent: float = 0.4  # beta: importance weights (N P(i)) ** -beta, normalised by their maximum.


class Sample(NamedTuple):
    trajectory: Trajectory  # Leaves [L, S, ...] timesteps and [L - 1, S, ...] actions.
    indices: chex.Array  # [S] the items' positions, for `set_priorities` (prioritised buffers).
    weights: chex.Array  # [S] importance weights, 1 for a uniform buffer.
    next_action: Any = None  # [S, ...] the action taken at each sequence's last timestep (ReBRAC's critic reads it).


def make_buffer(replay_settings: ReplaySettings, add_batch_size: int, sequence_length: int):
    """The flashbax buffer `replay_settings` describe for `add_batch_size` environments per device.

    Its rows hold `buffer_size // add_batch_size` items each; sampling waits
    until every row holds `min_replay_size // add_batch_size` items and at
    least one sequence.
    """
    row_length = replay_settings.buffer_size // add_batch_size
    if row_length < sequence_length + 1:
        raise ConfigError(
            "agent.buffer_size",
            f"{replay_settings.buffer_size} items over {add_batch_size} environments per device leave rows of "
            f"{row_length}, too short for sequences of {sequence_length}",
            f"set --config.agent.buffer_size to at least {(sequence_length + 1) * add_batch_size}",
        )
    shape = {
        "add_batch_size": add_batch_size,
        "sample_batch_size": replay_settings.batch_size,
        "sample_sequence_length": sequence_length,
        "period": 1,
        "min_length_time_axis": min_rows(replay_settings, add_batch_size, sequence_length),
        "max_length_time_axis": row_length,
    }
    if not replay_settings.prioritised:
        return flashbax.make_trajectory_buffer(**shape)
    return flashbax.make_prioritised_trajectory_buffer(
        **shape, priority_exponent=replay_settings.priority_exponent, device=_sum_tree_device()
    )


def _sum_tree_device() -> str:
    """flashbax's name for the platform, which picks its sum-tree update (the results are the same)."""
    return {"tpu": "tpu", "gpu": "gpu", "cuda": "gpu", "rocm": "gpu"}.get(jax.default_backend(), "cpu")


def empty_item(observation_spec: Any, action: jax.ShapeDtypeStruct, extras: Any = None, reward_shape=()) -> dict:
    """One zero item of a buffer (a flashbax buffer's `init` takes it): a timestep of `observation_spec`, an action,
    and the `extras` (specs of one environment's) the agent keeps; none by default. Rewards and discounts are
    `reward_shape`: `(N,)` for the N agents of a multi-agent environment (`podracer.envs.multi_agent`)."""
    timestep = TimeStep(
        step_type=jax.ShapeDtypeStruct((), jnp.int32),
        reward=jax.ShapeDtypeStruct(reward_shape, jnp.float32),
        discount=jax.ShapeDtypeStruct(reward_shape, jnp.float32),
        observation=observation_spec,
    )
    item = {"timestep": timestep, "action": action, "extras": {} if extras is None else extras}
    return jax.tree.map(lambda spec: jnp.zeros(spec.shape, spec.dtype), item)


def min_rows(replay_settings: ReplaySettings, add_batch_size: int, sequence_length: int) -> int:
    """Items each row of a buffer holds before sampling starts: `min_replay_size` over the rows, and a sequence."""
    return max(sequence_length, replay_settings.min_replay_size // add_batch_size)


def items(trajectory: Trajectory) -> dict:
    """A trajectory's first T timesteps with their actions and extras, batch-major `[B, T, ...]` as flashbax adds them.

    The extras are those `empty_item` was shown: give a trajectory whose
    extras the agent does not keep `extras={}`.
    """
    timestep = jax.tree.map(lambda x: x[:-1], trajectory.timestep)
    item = {"timestep": timestep, "action": trajectory.action, "extras": trajectory.extras}
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), item)


def add(buffer, state: Any, trajectory: Trajectory) -> Any:
    """`state` with the trajectory's T steps appended to each environment's row."""
    return buffer.add(state, items(trajectory))


def sample(buffer, state: Any, key: chex.PRNGKey, importance_exponent: float) -> Sample:
    """A batch of sequences as a time-major trajectory, with importance weights for a prioritised buffer."""
    drawn = buffer.sample(state, key)
    drawn_items = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), drawn.experience)  # [L, S, ...]
    trajectory = Trajectory(
        timestep=drawn_items["timestep"],
        action=drawn_items["action"][:-1],
        extras=jax.tree.map(lambda x: x[:-1], drawn_items["extras"]),
    )
    next_action = drawn_items["action"][-1]
    probabilities = getattr(drawn, "probabilities", None)
    if probabilities is None:
        return uniform_sample(trajectory, next_action)
    return Sample(trajectory, drawn.indices, importance_weights(probabilities, importance_exponent), next_action)


def uniform_sample(trajectory: Trajectory, next_action: Any = None) -> Sample:
    """`trajectory` (leaves `[L, S, ...]`) as a uniform buffer's sample: no positions, every weight 1. What a
    uniform buffer draws, and a batch a program sampled from a dataset (`podracer.offline.sampling`)."""
    size = trajectory.action.shape[1]
    return Sample(trajectory, jnp.zeros(size, jnp.int32), jnp.ones(size), next_action)


def importance_weights(probabilities: chex.Array, exponent: float) -> chex.Array:
    """(N P(i)) ** -beta / max_j (N P(j)) ** -beta over the batch (Schaul et al. 2016, Section 3.4).

    The buffer's size N cancels in the normalisation, so it is not needed.
    """
    weights = jnp.maximum(probabilities, 1e-12) ** -exponent
    return weights / jnp.max(weights)


def set_priorities(buffer, state: Any, indices: chex.Array, priorities: chex.Array) -> Any:
    """`state` with new priorities for sampled items (a prioritised buffer); a uniform buffer's state unchanged."""
    if not hasattr(buffer, "set_priorities"):
        return state
    return buffer.set_priorities(state, indices, priorities)


@struct.dataclass
class Replay:
    """The replay part of a learner state, one per device (wrapped in `PerDevice`)."""

    buffer: Any  # The flashbax buffer's state.
    staged: Any  # Items `[rows, T, ...]` of this update's earlier learn calls; None with one call per update.


@dataclasses.dataclass(frozen=True)
class ReplaySetup:
    """What an agent's replay loop is built from (`setup`): static values."""

    buffer: Any  # The flashbax buffer.
    rows: int  # Environments per device and update: the buffer's rows.
    learn_calls_per_update: int  # Sequential `learn` calls sharing those rows (Sebulba's learner_minibatches).
    unroll_length: int  # Steps each rollout adds per row.
    min_rows: int  # Items per row before the first sampled update.
    replay_ratio: int  # Gradient steps per `learn` call.
    importance_exponent: float


def setup(
    replay_settings: ReplaySettings, *, rows: int, learn_calls_per_update: int, unroll_length: int, sequence_length: int
) -> ReplaySetup:
    """The buffer and replay loop `replay_settings` describe for `rows` environments per device, each rollout adding
    `unroll_length` steps to each row over `learn_calls_per_update` calls, sampling sequences of `sequence_length`."""
    return ReplaySetup(
        buffer=make_buffer(replay_settings, rows, sequence_length),
        rows=rows,
        learn_calls_per_update=learn_calls_per_update,
        unroll_length=unroll_length,
        min_rows=min_rows(replay_settings, rows, sequence_length),
        replay_ratio=replay_settings.replay_ratio,
        importance_exponent=replay_settings.importance_exponent,
    )


def init(replay: ReplaySetup, observation_spec: Any, action: Any, extras: Any = None, reward_shape=()) -> PerDevice:
    """An empty buffer for items of these specs (see `empty_item`), as the agent's per-device learner state."""
    item = empty_item(observation_spec, action, extras, reward_shape)
    staged = None
    if replay.learn_calls_per_update > 1:
        staged = jax.tree.map(lambda x: jnp.zeros((replay.rows, replay.unroll_length) + x.shape, x.dtype), item)
    return PerDevice(Replay(replay.buffer.init(item), staged))


def _store(replay: ReplaySetup, state: Replay, trajectory: Trajectory, learn_calls: chex.Array) -> Replay:
    """`state` with the call's rollout added, or staged until the update's last `learn` call adds them all."""
    calls = replay.learn_calls_per_update
    if calls == 1:
        return state.replace(buffer=add(replay.buffer, state.buffer, trajectory))
    call = learn_calls % calls
    offset = call * (replay.rows // calls)
    staged = jax.tree.map(
        lambda s, x: jax.lax.dynamic_update_slice_in_dim(s, x, offset, axis=0), state.staged, items(trajectory)
    )
    buffer = jax.lax.cond(call == calls - 1, lambda: replay.buffer.add(state.buffer, staged), lambda: state.buffer)
    return Replay(buffer, staged)


def remember(replay: ReplaySetup, state: Any, trajectory: Trajectory) -> Any:
    """`state` (with a `replay` field from `init`) with `trajectory`'s T steps appended to each of its rows `[B]`,
    learning nothing: the experience a run starts with (`Agent.remember`). Only the last steps a row holds are
    kept where T is longer; nothing is staged."""
    buffer = state.replay.value.buffer
    row_length = jax.tree.leaves(buffer.experience)[0].shape[1]
    kept = min(trajectory.action.shape[0], row_length)
    newest = trajectory.replace(
        timestep=jax.tree.map(lambda x: x[-kept - 1 :], trajectory.timestep),
        action=jax.tree.map(lambda x: x[-kept:], trajectory.action),
        extras=jax.tree.map(lambda x: x[-kept:], trajectory.extras),
    )
    return state.replace(replay=PerDevice(state.replay.value.replace(buffer=add(replay.buffer, buffer, newest))))


LOOP_FIELDS = ("replay", "learn_calls")
"""The fields of a learner state that `make_learn`'s replay loop owns: the buffer, and its count of `learn` calls."""

GradientStep = Callable[[Any, Sample, str | None], tuple[Any, dict, chex.Array]]
"""`(learner_state, sample, axis_name) -> (learner_state, metrics, priorities [S])`: one update from sampled sequences."""


def make_learn(replay: ReplaySetup, gradient_step: GradientStep) -> Callable:
    """An agent's `learn` around its `gradient_step`: add the rollout, then `replay_ratio` sampled gradient steps.

    The learner state has fields `replay` (from `init`) and `learn_calls` (an
    int32 count, which this increments). Each device samples its own buffer;
    `gradient_step` averages over devices. Until every row holds `min_rows`
    items (its own or those `remember` added), `learn` only adds, and its
    metrics are zeros. A prioritised buffer's sampled items take the
    priorities `gradient_step` returns.
    """

    def one_step(state: Any, key: chex.PRNGKey, axis_name: str | None) -> tuple[Any, dict]:
        drawn = sample(replay.buffer, state.replay.value.buffer, key, replay.importance_exponent)
        state, metrics, priorities = gradient_step(state, drawn, axis_name)
        buffer = set_priorities(replay.buffer, state.replay.value.buffer, drawn.indices, priorities + 1e-6)
        return state.replace(replay=PerDevice(state.replay.value.replace(buffer=buffer))), metrics

    def learn(state: Any, trajectory: Trajectory, key: chex.PRNGKey, axis_name: str | None = None):
        chex.assert_axis_dimension(trajectory.action, 0, replay.unroll_length)
        stored = _store(replay, state.replay.value, trajectory, state.learn_calls)
        state = state.replace(replay=PerDevice(stored))
        key = jax.random.fold_in(key, collectives.axis_index(axis_name))  # Each device samples its own buffer.

        def sampled_updates(state: Any) -> tuple[Any, dict]:
            keys = jax.random.split(key, replay.replay_ratio)
            return jax.lax.scan(lambda s, k: one_step(s, k, axis_name), state, keys)

        def waiting(state: Any) -> tuple[Any, dict]:
            shapes = jax.eval_shape(sampled_updates, state)[1]
            return state, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

        can_sample = replay.buffer.can_sample(state.replay.value.buffer)
        state, metrics = jax.lax.cond(can_sample, sampled_updates, waiting, state)
        metrics = {name: jnp.mean(value) for name, value in metrics.items()}
        return state.replace(learn_calls=state.learn_calls + 1), metrics

    return learn
