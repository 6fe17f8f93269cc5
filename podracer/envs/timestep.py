"""The timestep record shared by every environment, in dm_env's vocabulary, and the one rule that makes it.

Fields and their meaning follow `dm_env.TimeStep`: `step_type` is FIRST on the
observation that starts an episode, LAST on the one that ends it and MID in
between; `reward` and `discount` describe the transition *into* this
observation; `discount` is 0 when the episode terminated and 1 when it was
truncated (a time limit), so a learner bootstraps exactly when it should.
Unlike dm_env, `reward` and `discount` are always arrays (0 and 1 on FIRST) so
that a batch of timesteps is one fixed-shape pytree.

`from_flags` is the only place step types and discounts are decided. Pure-JAX
environments call it with `jax.numpy`, host environments (a batch of numpy
arrays from envpool or Gymnasium) with `numpy`.
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

    step_type: Any  # int32: FIRST, MID or LAST.
    reward: Any  # float32.
    discount: Any  # float32: 0 on termination, 1 otherwise.
    observation: Any  # An array or a nested dict of arrays.

    def first(self) -> Any:
        return self.step_type == FIRST

    def last(self) -> Any:
        return self.step_type == LAST


def from_flags(observation: Any, reward: Any, terminated: Any, truncated: Any, first: Any = False, xp=jnp) -> TimeStep:
    """The timestep of Gymnasium-style flags, elementwise over any batch shape.

    FIRST where `first` (reward 0, discount 1, whatever the flags say); else LAST
    when terminated or truncated, MID otherwise. The discount is 0 exactly when
    terminated: termination wins over truncation, so an episode that ends in a
    terminal state on its last allowed step has discount 0. `xp` is the array
    module, `jax.numpy` or `numpy`.
    """
    terminated, first = xp.asarray(terminated, bool), xp.asarray(first, bool)
    done = terminated | xp.asarray(truncated, bool)
    return TimeStep(
        step_type=xp.where(first, FIRST, xp.where(done, LAST, MID)).astype(xp.int32),
        reward=xp.where(first, 0.0, reward).astype(xp.float32),
        discount=xp.where(terminated & ~first, 0.0, 1.0).astype(xp.float32),
        observation=observation,
    )


def restart(observation: Any) -> TimeStep:
    """The timestep that starts an episode."""
    return from_flags(observation, 0.0, False, False, first=True)


def transition(observation: Any, reward: Any, terminated: Any, truncated: Any) -> TimeStep:
    """A step inside or at the end of an episode."""
    return from_flags(observation, reward, terminated, truncated)
