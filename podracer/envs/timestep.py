"""The timestep record shared by every environment, in dm_env's vocabulary.

Fields and their meaning follow `dm_env.TimeStep`: `step_type` is FIRST on the
observation that starts an episode, LAST on the one that ends it and MID in
between; `reward` and `discount` describe the transition *into* this
observation; `discount` is 0 when the episode terminated and 1 when it was
truncated (a time limit), so a learner bootstraps exactly when it should.
Unlike dm_env, `reward` and `discount` are always arrays (0 and 1 on FIRST) so
that a batch of timesteps is one fixed-shape pytree.
"""

from typing import Any

import dm_env
import jax.numpy as jnp
from flax import struct

FIRST = int(dm_env.StepType.FIRST)
MID = int(dm_env.StepType.MID)
LAST = int(dm_env.StepType.LAST)


@struct.dataclass
class TimeStep:
    """One observation and the transition that led to it (dm_env semantics)."""

    step_type: jnp.ndarray  # int32: FIRST, MID or LAST.
    reward: jnp.ndarray  # float32.
    discount: jnp.ndarray  # float32: 0 on termination, 1 otherwise.
    observation: Any  # An array or a nested dict of arrays.

    def first(self) -> jnp.ndarray:
        return self.step_type == FIRST

    def last(self) -> jnp.ndarray:
        return self.step_type == LAST


def restart(observation: Any) -> TimeStep:
    """The timestep that starts an episode."""
    return TimeStep(
        step_type=jnp.int32(FIRST),
        reward=jnp.float32(0.0),
        discount=jnp.float32(1.0),
        observation=observation,
    )


def transition(
    observation: Any, reward: jnp.ndarray, terminated: jnp.ndarray, truncated: jnp.ndarray
) -> TimeStep:
    """A step inside or at the end of an episode.

    Termination wins over truncation: an episode that ends in a terminal state on
    its last allowed step has discount 0.
    """
    terminated = jnp.asarray(terminated, bool)
    done = jnp.logical_or(terminated, truncated)
    return TimeStep(
        step_type=jnp.where(done, LAST, MID).astype(jnp.int32),
        reward=jnp.asarray(reward, jnp.float32),
        discount=jnp.where(terminated, 0.0, 1.0).astype(jnp.float32),
        observation=observation,
    )
