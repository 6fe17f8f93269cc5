"""Several agents in one environment: the contract a multi-agent environment keeps, and the one rule for its timesteps.

Homogeneous agents are stacked on a leading agent axis of `num_agents`. A
multi-agent environment's observation is a dict:

- `LOCAL` `[N, ...]`: what each agent observes itself;
- `actions.ACTION_MASK` `[N, A]` (optional): each agent's legal actions, as
  single-agent environments give theirs, carried to `act`;
- `GLOBAL_STATE` `[...]` (optional): the state a centralised critic reads
  (MAPPO, Yu et al. 2022). It has no agent axis, and no agent's own network
  reads it (`actions.network_input`).

Actions are `[N]` (or `[N, D]` for real-valued ones), rewards and discounts
`[N]`. The step type belongs to the episode: LAST when it ends, for every
agent at once, and an auto-reset follows as for one agent. The discounts keep
podracer's semantics per agent: 0 for an agent whose own part ended in a
terminal state (a unit that died) and for every agent when the episode
terminated; 1 at a time limit, where the episode was truncated. A
single-agent environment is the one-agent case: it has no agent axis and no
`num_agents`, and nothing about it changes.
"""

import abc
from typing import Any

import chex
import jax.numpy as jnp
from dm_env import specs

from podracer.envs.actions import GLOBAL_STATE
from podracer.envs.base import Environment
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep

__all__ = ["GLOBAL_STATE", "LOCAL", "MultiAgentEnvironment", "num_agents", "restart", "transition"]

LOCAL = "local"


class MultiAgentEnvironment(Environment):
    """A pure-JAX environment of `num_agents` homogeneous agents, stacked on a leading agent axis (see above)."""

    @property
    @abc.abstractmethod
    def num_agents(self) -> int:
        """N, the size of the agent axis."""

    def reward_spec(self) -> specs.Array:
        return specs.Array((self.num_agents,), jnp.float32, name="reward")

    def discount_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((self.num_agents,), jnp.float32, 0.0, 1.0, name="discount")

    def has_global_state(self) -> bool:
        """Whether observations carry a `GLOBAL_STATE`, for a centralised critic."""
        return GLOBAL_STATE in self.observation_spec()


def num_agents(env: Any) -> int:
    """How many agents act in `env`: its `num_agents`, or 1 for a single-agent environment."""
    return env.num_agents if isinstance(env, MultiAgentEnvironment) else 1


def restart(observation: dict, agents: int) -> TimeStep:
    """The FIRST timestep of an episode of `agents` agents: rewards 0, discounts 1."""
    return TimeStep(
        step_type=jnp.int32(FIRST),
        reward=jnp.zeros((agents,), jnp.float32),
        discount=jnp.ones((agents,), jnp.float32),
        observation=observation,
    )


def transition(
    observation: dict, reward: chex.Array, agent_terminated: chex.Array, terminated: chex.Array, truncated: chex.Array
) -> TimeStep:
    """A step of every agent: LAST when the episode `terminated` or was `truncated`, MID otherwise.

    `reward` and `agent_terminated` are `[N]`: an agent's discount is 0 where
    its own part ended in a terminal state or the episode terminated, 1
    otherwise (a time limit included). Termination wins over truncation.
    """
    chex.assert_equal_shape([reward, agent_terminated])
    terminated = jnp.asarray(terminated, bool)
    ended = terminated | jnp.asarray(truncated, bool)
    return TimeStep(
        step_type=jnp.where(ended, LAST, MID).astype(jnp.int32),
        reward=jnp.asarray(reward, jnp.float32),
        discount=jnp.where(agent_terminated | terminated, 0.0, 1.0).astype(jnp.float32),
        observation=observation,
    )
