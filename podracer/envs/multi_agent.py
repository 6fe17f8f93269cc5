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

Agents of different kinds (whose observation or action spaces differ, MPE
simple_tag's adversaries and runner say) cannot share one stacked axis. Such
an environment groups them into teams of alike agents (`teams`: each team's
size, by name): `LOCAL` and `ACTION_MASK` are then dicts by team of
`[N_t, ...]` arrays, and actions, rewards and discounts dicts of `[N_t]`,
with one step type and one global state for all.

`MultiAgent` is what any environment of several agents says about them, a
pure-JAX one (`MultiAgentEnvironment`, for Anakin) or a batch stepped on the
host (PettingZoo's, for Sebulba: `podracer.envs.host_suites.pettingzoo_env`), so the
checks of agent against environment read both the same way. Both make their
timesteps with `transition`, with `jax.numpy` or `numpy`.
"""

import abc
from typing import Any

import chex
import jax.numpy as jnp
from dm_env import specs

from podracer.envs.actions import GLOBAL_STATE
from podracer.envs.base import Environment
from podracer.envs.timestep import FIRST, TimeStep, from_flags

__all__ = [
    "GLOBAL_STATE",
    "LOCAL",
    "MultiAgent",
    "MultiAgentEnvironment",
    "agent_axis",
    "agent_layout",
    "num_agents",
    "restart",
    "stacked_action_spec",
    "transition",
]

LOCAL = "local"


class MultiAgent(abc.ABC):
    """An environment (or a host batch of them) of `num_agents` homogeneous agents on an agent axis (see above)."""

    @property
    @abc.abstractmethod
    def num_agents(self) -> int:
        """N, the size of the agent axis."""

    @abc.abstractmethod
    def observation_spec(self) -> Any:
        """One environment's observation spec: a dict with `LOCAL` `[N, ...]` (see above)."""

    @property
    def teams(self) -> dict[str, int] | None:
        """Each team's size, by name, where the agents are of different kinds; None where they share one axis."""
        return None

    def reward_spec(self) -> Any:
        return _by_team(self, lambda n: specs.Array((n,), jnp.float32, name="reward"))

    def discount_spec(self) -> Any:
        return _by_team(self, lambda n: specs.BoundedArray((n,), jnp.float32, 0.0, 1.0, name="discount"))

    def has_global_state(self) -> bool:
        """Whether observations carry a `GLOBAL_STATE`, for a centralised critic."""
        return GLOBAL_STATE in self.observation_spec()


class MultiAgentEnvironment(MultiAgent, Environment):
    """A pure-JAX environment of `num_agents` homogeneous agents, stacked on a leading agent axis (see above)."""


def _by_team(env: MultiAgent, make: Any) -> Any:
    """`make(N)` for agents on one axis, or `{team: make(N_t)}` for teams."""
    return make(env.num_agents) if env.teams is None else {team: make(size) for team, size in env.teams.items()}


def agent_layout(env: Any) -> int | dict[str, int]:
    """How the agents of `env` are laid out: each team's size where it has teams, else how many agents it has."""
    return env.teams if isinstance(env, MultiAgent) and env.teams is not None else num_agents(env)


def num_agents(env: Any) -> int:
    """How many agents act in `env`: its `num_agents`, or 1 for a single-agent environment."""
    return env.num_agents if isinstance(env, MultiAgent) else 1


def agent_axis(env: Any) -> tuple[int, ...]:
    """The shape an environment's rewards and discounts have: `(N,)` for several agents, `()` for one."""
    return (env.num_agents,) if isinstance(env, MultiAgent) else ()


def stacked_action_spec(single: specs.BoundedArray, agents: int) -> specs.BoundedArray:
    """The actions of `agents` alike agents, from one agent's action spec: `[N]` ids in [0, n) for a
    `DiscreteArray`, `[N, ...]` reals within the same bounds for a `BoundedArray`."""
    if isinstance(single, specs.DiscreteArray):
        return specs.BoundedArray((agents,), single.dtype, 0, single.num_values - 1, name="action")
    return specs.BoundedArray((agents, *single.shape), single.dtype, single.minimum, single.maximum, name="action")


def restart(observation: dict, agents: int | dict[str, int]) -> TimeStep:
    """The FIRST timestep of an episode of `agents` agents (or of teams of those sizes): rewards 0, discounts 1."""
    sizes = agents if isinstance(agents, dict) else {"": agents}
    reward = {team: jnp.zeros((size,), jnp.float32) for team, size in sizes.items()}
    discount = {team: jnp.ones((size,), jnp.float32) for team, size in sizes.items()}
    if not isinstance(agents, dict):
        reward, discount = reward[""], discount[""]
    return TimeStep(step_type=jnp.int32(FIRST), reward=reward, discount=discount, observation=observation)


def transition(
    observation: dict,
    reward: chex.Array,
    agent_terminated: chex.Array,
    terminated: chex.Array,
    truncated: chex.Array,
    first: Any = False,
    xp: Any = jnp,
) -> TimeStep:
    """A step of every agent: LAST when the episode `terminated` or was `truncated`, MID otherwise.

    `reward` and `agent_terminated` are `[..., N]`, the episode's flags `[...]`
    (one environment, or a host batch `[B]`): an agent's discount is 0 where
    its own part ended in a terminal state or the episode terminated, 1
    otherwise (a time limit included). Termination wins over truncation.
    FIRST where `first` (a host batch's environments that start anew): rewards
    0 and discounts 1. `xp` is `jax.numpy` or `numpy`; `timestep.from_flags`
    decides, once for the episode's step type and once for the agents'. For
    teams, `reward` and `agent_terminated` are dicts of them, and so are the
    rewards and discounts made.
    """
    if isinstance(reward, dict):
        steps = {
            team: transition(observation, reward[team], agent_terminated[team], terminated, truncated, first, xp)
            for team in reward
        }
        step = next(iter(steps.values()))
        return step.replace(
            reward={team: s.reward for team, s in steps.items()},
            discount={team: s.discount for team, s in steps.items()},
        )
    chex.assert_equal_shape([reward, agent_terminated])
    terminated, first = xp.asarray(terminated, bool), xp.asarray(first, bool)
    episode = from_flags(observation, 0.0, terminated, truncated, first, xp)
    agents_ended = xp.asarray(agent_terminated, bool) | terminated[..., None]
    agents = from_flags(observation, reward, agents_ended, False, first[..., None], xp)
    return agents.replace(step_type=episode.step_type)
