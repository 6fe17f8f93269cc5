"""Wrappers that turn an episodic environment into an endless batched stream for training.

`Batched` steps a batch of independent copies of an environment (`vmap`).
`AutoReset` keeps dm_env's contract: the step that ends an episode returns a
LAST timestep (final observation, reward, discount) so the learner sees the
transition, and the *next* step starts a new episode with a FIRST timestep,
ignoring its action, through the environment's `reset_episode` (which keeps
what outlives an episode, such as an LPG environment's layout). Around a batch it resets only when some environment needs
it (`lax.cond`), so the reset costs nothing on the many steps where none does.
`EpisodeStatistics` keeps the undiscounted return and length of the running
episode (`podracer.envs.episodes`, the rule host environments share); at a
LAST timestep they are the finished episode's figures.
Every random draw belongs to one environment's own key, so results do not
depend on how a batch is split.
"""

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp
from flax import struct

from podracer.envs import actions, episodes
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


@dataclasses.dataclass(frozen=True)
class Batched(Wrapper):
    """A batch of copies: `reset` takes keys `[B]`; states, actions and timesteps get a leading `[B]`.

    Specs stay those of one environment.
    """

    def reset(self, key: chex.PRNGKey):
        return jax.vmap(self.env.reset)(key)

    def step(self, state, action):
        return jax.vmap(self.env.step)(state, action)

    def reset_episode(self, state, key: chex.PRNGKey):
        return jax.vmap(self.env.reset_episode)(state, key)


@dataclasses.dataclass(frozen=True)
class ClipActions(Wrapper):
    """Clips real-valued actions into the action spec's bounds as they enter the environment (`actions`)."""

    def step(self, state, action):
        return self.env.step(state, actions.clip_to_spec(action, self.env.action_spec()))

    def reset_episode(self, state, key: chex.PRNGKey):
        return self.env.reset_episode(state, key)


@struct.dataclass
class AutoResetState:
    env_state: Any
    key: chex.PRNGKey  # One per environment: the batch shape.
    needs_reset: jnp.ndarray  # Batch shape: True where the previous timestep was LAST.


@dataclasses.dataclass(frozen=True)
class AutoReset(Wrapper):
    """Starts a new episode on the step after a LAST timestep; works on one environment or a `Batched` one."""

    def reset(self, key: chex.PRNGKey) -> tuple[AutoResetState, ts.TimeStep]:
        key, reset_key = split_keys(key)
        env_state, timestep = self.env.reset(reset_key)
        return AutoResetState(env_state, key, jnp.zeros(_batch_shape(key), bool)), timestep

    def step(self, state: AutoResetState, action: chex.Array) -> tuple[AutoResetState, ts.TimeStep]:
        stepped = self.env.step(state.env_state, action)

        def reset_finished(_):
            next_key, reset_key = split_keys(state.key)
            reset = self.env.reset_episode(state.env_state, reset_key)  # What outlives an episode stays.
            return select_tree(state.needs_reset, (*reset, next_key), (*stepped, state.key))

        def keep_stepped(_):
            # select(p, x, x) is folded away by XLA; it gives both branches the same
            # types, device variance under shard_map included.
            unchanged = (*stepped, state.key)
            return select_tree(state.needs_reset, unchanged, unchanged)

        env_state, timestep, key = jax.lax.cond(jnp.any(state.needs_reset), reset_finished, keep_stepped, None)
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
        zeros = jnp.zeros_like(episodes.team_reward(timestep))
        return EpisodeStatisticsState(env_state, zeros, zeros.astype(jnp.int32)), timestep

    def step(self, state: EpisodeStatisticsState, action: chex.Array):
        env_state, timestep = self.env.step(state.env_state, action)
        episode_return, episode_length = episodes.update(state.episode_return, state.episode_length, timestep)
        return EpisodeStatisticsState(env_state, episode_return, episode_length), timestep


def _batch_shape(key: chex.PRNGKey) -> tuple[int, ...]:
    """The shape of a key array: typed keys, or raw uint32 keys with a trailing key axis."""
    return key.shape if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) else key.shape[:-1]


def split_keys(key: chex.PRNGKey) -> tuple[chex.PRNGKey, chex.PRNGKey]:
    """Splits every key of a key array of any shape into two."""
    split = jax.random.split
    for _ in _batch_shape(key):
        split = jax.vmap(split)
    keys = split(key)
    return keys[..., 0], keys[..., 1]


def select_tree(predicate: jnp.ndarray, on_true: Any, on_false: Any) -> Any:
    """`jnp.where` over matching pytrees, the predicate broadcast over each leaf's trailing axes."""

    def select(a, b):
        return jnp.where(predicate.reshape(predicate.shape + (1,) * (a.ndim - predicate.ndim)), a, b)

    return jax.tree.map(select, on_true, on_false)


def wrap_for_training(env: Environment, batched: bool = True) -> EpisodeStatistics:
    """The wrappers every training loop uses: endless episodes with statistics, over a batch by default.

    Real-valued actions are clipped to the action bounds on the way in (`ClipActions`).
    """
    env = ClipActions(env)
    return EpisodeStatistics(AutoReset(Batched(env) if batched else env))


def wrap_for_evaluation(env: Environment) -> Batched:
    """A batch of `env` that plays one episode each (no auto-reset: the LAST timestep ends it), actions clipped to
    their bounds as in training (`wrap_for_training`)."""
    return Batched(ClipActions(env))
