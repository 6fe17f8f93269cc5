"""Episode statistics from a stream of timesteps: the one rule JAX and host environments share.

The running episode's undiscounted return and length restart at every FIRST
timestep; at a LAST timestep they are the finished episode's figures. Pure-JAX
environments use these functions with `jax.numpy` (through the
`EpisodeStatistics` wrapper), Sebulba's actors with `numpy` on their host
environments' timesteps. An episode of several agents counts their mean
reward (`team_reward`). Both see the environment's own reward: reward
clipping belongs to the learner (`config.agent.reward_clip`), so reported
returns are always the game's.
"""

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from podracer.envs.timestep import TimeStep


class Completed(NamedTuple):
    """The episodes that ended at some timesteps: how many, their summed returns and lengths."""

    episodes: Any
    return_sum: Any
    length_sum: Any


def update(episode_return: Any, episode_length: Any, timestep: TimeStep, xp=jnp) -> tuple[Any, Any]:
    """The running episode's return and length once `timestep` has been seen (elementwise)."""
    first = timestep.first()
    return xp.where(first, 0.0, episode_return + team_reward(timestep)), xp.where(first, 0, episode_length + 1)


def team_reward(timestep: TimeStep) -> Any:
    """The reward an episode's return adds up: the environment's, or the mean over the agents of several agents'
    (rewards `[..., N]` beside a step type `[...]`, or a dict of them by team), as JaxMARL's baselines report a
    team's return."""
    rewards = jax.tree.leaves(timestep.reward)
    extra_axes = rewards[0].ndim - timestep.step_type.ndim
    if not extra_axes:
        return timestep.reward
    agent_axes = tuple(range(-extra_axes, 0))
    total = sum(reward.sum(axis=agent_axes) for reward in rewards)
    return total / sum(math.prod(reward.shape[-extra_axes:]) for reward in rewards)


def completed(timestep: TimeStep, episode_return: Any, episode_length: Any, xp=jnp) -> Completed:
    """Totals over the episodes that end at `timestep` (any shape: one batch, or a whole unroll of them).

    `episode_return` and `episode_length` are the figures after `timestep`, as `update` returns them.
    """
    ended = timestep.last()
    return Completed(
        episodes=xp.sum(ended, dtype=xp.float32),
        return_sum=xp.sum(xp.where(ended, episode_return, 0.0)),
        length_sum=xp.sum(xp.where(ended, episode_length, 0), dtype=xp.float32),
    )
