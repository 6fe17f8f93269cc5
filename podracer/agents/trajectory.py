"""The trajectory record both architectures produce and every loss consumes.

A trajectory of T transitions over B environments holds T + 1 timesteps: the
observation each action was chosen from, plus the final observation to
bootstrap from. Transition t goes from `timestep[t]` to `timestep[t + 1]`; its
reward and discount are those of `timestep[t + 1]`. With dm_env's auto-reset a
LAST timestep is followed by the FIRST of the next episode; that step is not a
real transition, so it is masked out (`valid`) and the return recursion is cut
at every LAST (`bootstrap_here`).
"""

import chex
import jax
import jax.numpy as jnp
from flax import struct

from podracer.envs.timestep import LAST, TimeStep


@struct.dataclass
class Trajectory:
    timestep: TimeStep  # Leaves [T + 1, B, ...].
    action: chex.Array  # [T, B] int32.
    behaviour_logits: chex.Array  # [T, B, A]: the acting policy's logits, for off-policy corrections.


@struct.dataclass
class Transitions:
    """Per-transition views of a trajectory, each `[T, B]`."""

    rewards: chex.Array
    discounts: chex.Array  # gamma * environment discount.
    valid: chex.Array  # 1.0 for real transitions, 0.0 for the LAST -> FIRST reset step.
    bootstrap_here: chex.Array  # 1.0 where the next timestep is LAST: the return must not look past it.


def transitions(trajectory: Trajectory, gamma: float) -> Transitions:
    step_type = trajectory.timestep.step_type
    chex.assert_rank(step_type, 2)
    chex.assert_equal_shape([step_type[1:], trajectory.action])
    return Transitions(
        rewards=trajectory.timestep.reward[1:],
        discounts=gamma * trajectory.timestep.discount[1:],
        valid=(step_type[:-1] != LAST).astype(jnp.float32),
        bootstrap_here=(step_type[1:] == LAST).astype(jnp.float32),
    )


def merge_leading_dims(tree, num_dims: int = 2):
    """Reshapes every leaf `[d0, ..., d_{n-1}, ...]` to `[d0 * ... * d_{n-1}, ...]`."""
    return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[num_dims:]), tree)
