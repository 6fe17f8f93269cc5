"""Wrappers that turn an episodic environment into an endless stream for training.

`AutoReset` keeps dm_env's contract: the step that ends an episode returns a
LAST timestep (final observation, reward, discount) so the learner sees the
transition, and the *next* step starts a new episode with a FIRST timestep,
ignoring its action. `EpisodeStatistics` accumulates the undiscounted return
and length of the running episode; at a LAST timestep they are the finished
episode's figures.
"""

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp
from flax import struct

from podracer.envs import timestep as ts
from podracer.envs.base import Environment


@dataclasses.dataclass(frozen=True)
class Wrapper(Environment):
    env: Environment

    def reset(self, key):
        return self.env.reset(key)

    def step(self, state, action):
        return self.env.step(state, action)

    def observation_spec(self):
        return self.env.observation_spec()

    def action_spec(self):
        return self.env.action_spec()


@struct.dataclass
class AutoResetState:
    env_state: Any
    key: chex.PRNGKey
    needs_reset: jnp.ndarray  # True when the previous timestep was LAST.


@dataclasses.dataclass(frozen=True)
class AutoReset(Wrapper):
    def reset(self, key: chex.PRNGKey) -> tuple[AutoResetState, ts.TimeStep]:
        key, reset_key = jax.random.split(key)
        env_state, timestep = self.env.reset(reset_key)
        return AutoResetState(env_state, key, jnp.bool_(False)), timestep

    def step(self, state: AutoResetState, action: chex.Array) -> tuple[AutoResetState, ts.TimeStep]:
        # Both branches run under vmap anyway, so compute both and select.
        key, reset_key = jax.random.split(state.key)
        reset_state, reset_timestep = self.env.reset(reset_key)
        stepped_state, stepped_timestep = self.env.step(state.env_state, action)
        env_state, timestep = select_tree(state.needs_reset, (reset_state, reset_timestep), (stepped_state, stepped_timestep))
        key = jnp.where(state.needs_reset, key, state.key)
        return AutoResetState(env_state, key, timestep.last()), timestep


@struct.dataclass
class EpisodeStatisticsState:
    env_state: Any
    episode_return: jnp.ndarray  # Undiscounted return of the running (or just finished) episode.
    episode_length: jnp.ndarray


@dataclasses.dataclass(frozen=True)
class EpisodeStatistics(Wrapper):
    def reset(self, key: chex.PRNGKey) -> tuple[EpisodeStatisticsState, ts.TimeStep]:
        env_state, timestep = self.env.reset(key)
        return EpisodeStatisticsState(env_state, jnp.float32(0.0), jnp.int32(0)), timestep

    def step(self, state: EpisodeStatisticsState, action: chex.Array):
        env_state, timestep = self.env.step(state.env_state, action)
        new_episode = timestep.first()
        episode_return = jnp.where(new_episode, 0.0, state.episode_return + timestep.reward)
        episode_length = jnp.where(new_episode, 0, state.episode_length + 1)
        return EpisodeStatisticsState(env_state, episode_return, episode_length), timestep


def select_tree(predicate: jnp.ndarray, on_true: Any, on_false: Any) -> Any:
    """`jnp.where` over matching pytrees with a scalar predicate."""
    return jax.tree.map(lambda a, b: jnp.where(predicate, a, b), on_true, on_false)


def wrap_for_training(env: Environment) -> EpisodeStatistics:
    """The wrappers every training loop uses: endless episodes with statistics."""
    return EpisodeStatistics(AutoReset(env))
