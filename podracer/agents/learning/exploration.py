"""Epsilon-greedy acting on Q-values, as DQN and PQN explore: the schedule, the choice and the acting function.

With probability epsilon an action is drawn uniformly (from the legal ones,
where the environment masks actions), otherwise the argmax of the Q-values is
taken (Mnih et al. 2015, Algorithm 1). Epsilon decays linearly from
`epsilon_start` to `epsilon_end` over the first `epsilon_fraction` of the
run's `learn` calls, then stays (the Nature DQN's schedule, counted in
updates rather than frames).
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct

from podracer.agents.models import networks
from podracer.agents.models.policy import mask_illegal
from podracer.envs.actions import action_mask


@dataclasses.dataclass(frozen=True)
class EpsilonSettings:
    """The exploration fields of a Q-learning agent's `config.agent`."""

    epsilon_start: float = 1.0
    epsilon_end: float = 0.05
    epsilon_fraction: float = 0.5  # Of the run's learn calls, over which epsilon decays linearly.


@struct.dataclass
class ActingParams:
    network: networks.NetworkParams
    epsilon: chex.Array  # The exploration rate now.


def acting_params(network: networks.NetworkParams, epsilon: optax.Schedule, learn_calls: chex.Array) -> ActingParams:
    """The network with the exploration rate `epsilon` gives after `learn_calls` updates."""
    return ActingParams(network, jnp.asarray(epsilon(learn_calls), jnp.float32))


def epsilon_schedule(settings: EpsilonSettings, num_updates: int) -> optax.Schedule:
    """Epsilon by `learn` calls so far: linear from `epsilon_start` to `epsilon_end` over the first
    `epsilon_fraction` of the run's `num_updates` calls, then constant."""
    steps = max(1, int(settings.epsilon_fraction * num_updates))
    return optax.linear_schedule(settings.epsilon_start, settings.epsilon_end, steps)


def epsilon_greedy(
    q_values: chex.Array, epsilon: chex.Array, key: chex.PRNGKey, legal: chex.Array | None = None
) -> chex.Array:
    """int32 `[B]`: with probability epsilon a uniformly random action, else argmax Q; one key per environment.

    With a mask of legal actions `legal` `[B, A]` the random action is uniform over the legal ones (the network
    has already masked the Q-values, so the argmax is legal too).
    """
    explore_keys, action_keys = jnp.moveaxis(jax.vmap(jax.random.split)(key), 1, 0)
    explore = jax.vmap(jax.random.uniform)(explore_keys) < epsilon
    if legal is None:
        random_actions = jax.vmap(lambda k: jax.random.randint(k, (), 0, q_values.shape[-1]))(action_keys)
    else:
        random_actions = jax.vmap(jax.random.categorical)(action_keys, mask_illegal(jnp.zeros_like(q_values), legal))
    return jnp.where(explore, random_actions, jnp.argmax(q_values, axis=-1)).astype(jnp.int32)


def act(params: ActingParams, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """Epsilon-greedy actions `[B]` of a feed-forward Q-network, one key per environment; the extras are the
    Q-values `[B, A]`."""
    _, q_values = params.network.step((), observation)
    return epsilon_greedy(q_values, params.epsilon, key, action_mask(observation)), {"q_values": q_values}


def greedy(act_fn: Callable) -> Callable:
    """`act_fn` (`act`, or DQN's recurrent one) with epsilon 0: the argmax of the (legal) Q-values."""
    return lambda params, *args: act_fn(params.replace(epsilon=jnp.zeros_like(params.epsilon)), *args)
