"""Wrappers that turn an episodic environment into an endless batched stream for training.

`Batched` steps a batch of independent copies of an environment (`vmap`).
`AutoReset` keeps dm_env's contract: the step that ends an episode returns a
LAST timestep (final observation, reward, discount) so the learner sees the
transition, and the *next* step starts a new episode with a FIRST timestep,
ignoring its action, through the environment's `reset_episode` (which keeps
what outlives an episode, such as an LPG environment's layout). Around a batch
it resets only when some environment needs it (`lax.cond`), so the reset costs
nothing on the many steps where none does. With a `reset_fraction` below 1, a
step on which at most K = ceil(fraction x B) environments need it resets just
those K (gathered, reset and scattered back, in a `lax.switch`), and only a
step with more resets the whole batch. Where a reset is expensive (Craftax
generates a world) that saves most of its cost, as Craftax's "optimistic
resets" do (Matthews et al. 2024), but unlike them every environment still
starts from its own key, so the fraction changes what a reset costs, not which
episode starts.
`EpisodeStatistics` keeps the undiscounted return and length of the running
episode (`podracer.envs.episodes`, the rule host environments share); at a
LAST timestep they are the finished episode's figures.
Every random draw belongs to one environment's own key, so results do not
depend on how a batch is split.
"""

import dataclasses
import functools
import math
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
    """Starts a new episode on the step after a LAST timestep; works on one environment or a `Batched` one.

    `reset_fraction` (in (0, 1]) only changes what a reset costs around a `Batched` environment of B: a step on
    which 1 to K = ceil(reset_fraction x B) environments need a reset resets those K alone (`_reset_some`).
    """

    reset_fraction: float = 1.0

    def __post_init__(self):
        if not 0.0 < self.reset_fraction <= 1.0:
            raise ValueError(f"reset_fraction must be in (0, 1], got {self.reset_fraction!r}.")

    def reset(self, key: chex.PRNGKey) -> tuple[AutoResetState, ts.TimeStep]:
        key, reset_key = split_keys(key)
        env_state, timestep = self.env.reset(reset_key)
        return AutoResetState(env_state, key, jnp.zeros(_batch_shape(key), bool)), timestep

    def step(self, state: AutoResetState, action: chex.Array) -> tuple[AutoResetState, ts.TimeStep]:
        stepped = (*self.env.step(state.env_state, action), state.key)

        def keep_stepped():
            # select(p, x, x) is folded away by XLA; it gives every branch the same
            # types, device variance under shard_map included.
            return select_tree(state.needs_reset, stepped, stepped)

        def reset_all():
            return select_tree(state.needs_reset, self._reset(state.env_state, state.key), stepped)

        few = resets_per_step(_batch_shape(state.key), self.reset_fraction)
        if few:  # Keep the stepped, reset `few` or fewer alone, or reset all.
            needed = jnp.sum(state.needs_reset)
            index = jnp.where(needed > few, 2, jnp.minimum(needed, 1))
            reset_few = functools.partial(self._reset_some, state, stepped, few)
            env_state, timestep, key = jax.lax.switch(index, [keep_stepped, reset_few, reset_all])
        else:  # The whole batch's program, unchanged from before partial resets, so its rounding is too.
            env_state, timestep, key = jax.lax.cond(jnp.any(state.needs_reset), reset_all, keep_stepped)
        return AutoResetState(env_state, key, timestep.last()), timestep

    def _reset(self, env_state: Any, key: chex.PRNGKey) -> tuple[Any, ts.TimeStep, chex.PRNGKey]:
        """Each environment's next episode, from its own key: `(env_state, timestep, next_key)`.

        The one rule of both paths, so which of them resets an environment does not change its episode.
        """
        next_key, reset_key = split_keys(key)
        return (*self.env.reset_episode(env_state, reset_key), next_key)  # What outlives an episode stays.

    def _reset_some(self, state: AutoResetState, stepped: tuple, few: int) -> tuple:
        """`stepped` with the (at most `few`) environments that need a reset reset, the others untouched.

        Their indices are padded with B, one past the end: a pad gathers environment B - 1 (clipped), is reset for
        nothing, and its scatter is dropped.
        """
        (batch,) = state.needs_reset.shape
        (indices,) = jnp.nonzero(state.needs_reset, size=few, fill_value=batch)
        reset = self._reset(gather_rows(state.env_state, indices), gather_rows(state.key, indices))
        return scatter_rows(stepped, indices, reset)


def gather_rows(tree: Any, indices: jnp.ndarray) -> Any:
    """The rows `indices` (sorted) of every leaf `[B, ...]`; an index past the end reads row B - 1."""
    return jax.tree.map(lambda x: x.at[indices].get(mode="clip", indices_are_sorted=True), tree)


def scatter_rows(into: Any, indices: jnp.ndarray, rows: Any) -> Any:
    """`into` (leaves `[B, ...]`) with `rows` (leaves `[K, ...]`) written at `indices` (sorted); one past the end is
    dropped."""
    return jax.tree.map(lambda x, row: x.at[indices].set(row, mode="drop", indices_are_sorted=True), into, rows)


def resets_per_step(batch_shape: tuple[int, ...], reset_fraction: float) -> int:
    """K = ceil(reset_fraction x B), the most environments a step resets alone; 0 where that saves nothing (K >= B)
    or there is no batch of one axis (a single environment)."""
    if len(batch_shape) != 1:
        return 0
    few = math.ceil(reset_fraction * batch_shape[0])
    return few if few < batch_shape[0] else 0


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


def wrap_for_training(env: Environment, batched: bool = True, reset_fraction: float = 1.0) -> EpisodeStatistics:
    """The wrappers every training loop uses: endless episodes with statistics, over a batch by default.

    Real-valued actions are clipped to the action bounds on the way in (`ClipActions`). `reset_fraction` is the share
    of the batch a step may reset without resetting all of it (`AutoReset`): it changes what resets cost.
    """
    env = ClipActions(env)
    return EpisodeStatistics(AutoReset(Batched(env) if batched else env, reset_fraction))


def wrap_for_evaluation(env: Environment) -> Batched:
    """A batch of `env` that plays one episode each (no auto-reset: the LAST timestep ends it), actions clipped to
    their bounds as in training (`wrap_for_training`)."""
    return Batched(ClipActions(env))
