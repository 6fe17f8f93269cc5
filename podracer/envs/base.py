"""The functional environment interface every pure-JAX environment implements.

An environment is an immutable description (its constants); its whole mutable
state is a pytree passed in and out, so `reset` and `step` are pure functions
that `jax.jit`, `jax.vmap` and `lax.scan` compose freely. This is the
interface Anakin needs: acting, stepping and learning in one XLA program.
"""

import abc
from typing import Any

import chex
import dm_env
from dm_env import specs

from podracer.envs.timestep import TimeStep

EnvState = Any


class Environment(abc.ABC):
    """A pure-JAX environment with dm_env semantics.

    Subclasses are frozen dataclasses, so they are hashable and can be closed
    over by jitted functions as static configuration.
    """

    @abc.abstractmethod
    def reset(self, key: chex.PRNGKey) -> tuple[EnvState, TimeStep]:
        """Starts an episode; returns the state and a FIRST timestep."""

    @abc.abstractmethod
    def step(self, state: EnvState, action: chex.Array) -> tuple[EnvState, TimeStep]:
        """Advances one step from a state whose last timestep was not LAST."""

    def reset_episode(self, state: EnvState, key: chex.PRNGKey) -> tuple[EnvState, TimeStep]:
        """Starts the next episode after a LAST timestep; auto-reset calls this, not `reset`.

        `reset(key)` unless the environment keeps something across episodes, which it
        takes from `state`: an LPG environment's layout lives for an agent's lifetime
        (`podracer.envs.lpg`), so only `reset` draws a new one.
        """
        del state  # Nothing outlives an episode.
        return self.reset(key)

    @abc.abstractmethod
    def observation_spec(self) -> Any:
        """A `dm_env.specs.Array` (or a nested dict of them) for observations."""

    @abc.abstractmethod
    def action_spec(self) -> specs.DiscreteArray:
        """The actions the environment accepts."""

    def reward_spec(self) -> specs.Array:
        return dm_env.Environment.reward_spec(None)  # A float scalar, as in dm_env.

    def discount_spec(self) -> specs.BoundedArray:
        return dm_env.Environment.discount_spec(None)  # A float scalar in [0, 1].
