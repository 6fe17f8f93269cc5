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

The buffer is the agent's, inside its learner state and on the devices; each
device holds its own (`podracer.per_device.PerDevice`), filled by its own
environments, so its size and batch are per device.
"""

from typing import Any, NamedTuple

import chex
import flashbax
import jax
import jax.numpy as jnp
from ml_collections import ConfigDict

from podracer import field_checks
from podracer.agents.trajectory import Trajectory
from podracer.envs.timestep import TimeStep
from podracer.errors import ConfigError

DEFAULTS = {
    "buffer_size": 10_000,  # Items (agent steps) each device keeps, over all its environments.
    "min_replay_size": 1_000,  # Items each device holds before the first sampled update.
    "batch_size": 128,  # Sequences each device samples per gradient step.
    "replay_ratio": 1,  # Sampled gradient steps per `learn` call, i.e. per rollout added.
    "prioritised": False,  # Sample in proportion to priority ** priority_exponent (Schaul et al. 2016).
    "priority_exponent": 0.6,  # alpha in the paper; 0 is uniform.
    "importance_exponent": 0.4,  # beta: importance weights (N P(i)) ** -beta, normalised by their maximum.
}
"""The replay fields of `config.agent` for an agent that learns from a buffer."""


class Sample(NamedTuple):
    trajectory: Trajectory  # Leaves [L, S, ...] timesteps and [L - 1, S, ...] actions.
    indices: chex.Array  # [S] the items' positions, for `set_priorities` (prioritised buffers).
    weights: chex.Array  # [S] importance weights, 1 for a uniform buffer.


def validate(config: ConfigDict) -> None:
    """Static checks of the replay fields (the `DEFAULTS` keys in `config.agent`)."""
    for field, example in (("buffer_size", 10_000), ("min_replay_size", 1_000), ("batch_size", 128)):
        field_checks.integer(config, f"agent.{field}", at_least=1, example=example)
    field_checks.integer(config, "agent.replay_ratio", at_least=1, example=1)
    field_checks.boolean(config, "agent.prioritised")
    field_checks.fraction(config, "agent.priority_exponent", example=0.6)
    field_checks.fraction(config, "agent.importance_exponent", example=0.4)
    if config.agent.min_replay_size > config.agent.buffer_size:
        raise ConfigError(
            "agent.min_replay_size",
            f"{config.agent.min_replay_size} is more than the buffer holds ({config.agent.buffer_size})",
            "set --config.agent.min_replay_size at most agent.buffer_size",
        )


def make_buffer(agent_config: ConfigDict, add_batch_size: int, sequence_length: int):
    """The flashbax buffer `agent_config` describes for `add_batch_size` environments per device.

    Its rows hold `buffer_size // add_batch_size` items each; sampling waits
    until every row holds `min_replay_size // add_batch_size` items and at
    least one sequence.
    """
    row_length = agent_config.buffer_size // add_batch_size
    if row_length < sequence_length + 1:
        raise ConfigError(
            "agent.buffer_size",
            f"{agent_config.buffer_size} items over {add_batch_size} environments per device leave rows of "
            f"{row_length}, too short for sequences of {sequence_length}",
            f"set --config.agent.buffer_size to at least {(sequence_length + 1) * add_batch_size}",
        )
    shape = {
        "add_batch_size": add_batch_size,
        "sample_batch_size": agent_config.batch_size,
        "sample_sequence_length": sequence_length,
        "period": 1,
        "min_length_time_axis": min_rows(agent_config, add_batch_size, sequence_length),
        "max_length_time_axis": row_length,
    }
    if not agent_config.prioritised:
        return flashbax.make_trajectory_buffer(**shape)
    return flashbax.make_prioritised_trajectory_buffer(
        **shape, priority_exponent=agent_config.priority_exponent, device=_sum_tree_device()
    )


def _sum_tree_device() -> str:
    """flashbax's name for the platform, which picks its sum-tree update (the results are the same)."""
    return {"tpu": "tpu", "gpu": "gpu", "cuda": "gpu", "rocm": "gpu"}.get(jax.default_backend(), "cpu")


def empty_item(observation_spec: Any, action: jax.ShapeDtypeStruct) -> dict:
    """One zero item of a buffer (a flashbax buffer's `init` takes it): a timestep of `observation_spec` and an action."""
    timestep = TimeStep(
        step_type=jax.ShapeDtypeStruct((), jnp.int32),
        reward=jax.ShapeDtypeStruct((), jnp.float32),
        discount=jax.ShapeDtypeStruct((), jnp.float32),
        observation=observation_spec,
    )
    return jax.tree.map(lambda spec: jnp.zeros(spec.shape, spec.dtype), {"timestep": timestep, "action": action})


def min_rows(agent_config: ConfigDict, add_batch_size: int, sequence_length: int) -> int:
    """Items each row of a buffer holds before sampling starts: `min_replay_size` over the rows, and a sequence."""
    return max(sequence_length, agent_config.min_replay_size // add_batch_size)


def _items(trajectory: Trajectory) -> dict:
    """A trajectory's first T timesteps with their actions, batch-major `[B, T, ...]` as flashbax adds them."""
    items = {"timestep": jax.tree.map(lambda x: x[:-1], trajectory.timestep), "action": trajectory.action}
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), items)


def add(buffer, state: Any, trajectory: Trajectory) -> Any:
    """`state` with the trajectory's T steps appended to each environment's row."""
    return buffer.add(state, _items(trajectory))


def sample(buffer, state: Any, key: chex.PRNGKey, importance_exponent: float) -> Sample:
    """A batch of sequences as a time-major trajectory, with importance weights for a prioritised buffer."""
    drawn = buffer.sample(state, key)
    items = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), drawn.experience)  # [L, S, ...]
    trajectory = Trajectory(timestep=items["timestep"], action=items["action"][:-1], extras={})
    probabilities = getattr(drawn, "probabilities", None)
    if probabilities is None:
        size = jax.tree.leaves(items)[0].shape[1]
        return Sample(trajectory, jnp.zeros(size, jnp.int32), jnp.ones(size))
    return Sample(trajectory, drawn.indices, importance_weights(probabilities, importance_exponent))


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
