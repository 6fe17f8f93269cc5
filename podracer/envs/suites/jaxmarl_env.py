"""JaxMARL's multi-agent environments (Rutherford et al., NeurIPS 2024) for Anakin: `jaxmarl:MPE_simple_spread_v3`,
`jaxmarl:SMAX`, ...

The adapter keeps podracer's multi-agent contract (`podracer.envs.multi_agent`):
alike agents stacked on an agent axis in JaxMARL's own agent order
(`env.agents`), each agent's observation under `LOCAL`, its legal actions
under `ACTION_MASK` where JaxMARL gives them (`get_avail_actions`), and a
`GLOBAL_STATE` for centralised critics. Agents of different kinds come in
teams, named by their agent names without the index (`team_of`). It calls JaxMARL's transition,
`step_env`, never its auto-resetting `step`, and never resets by itself.

JaxMARL gives one `done` per agent and `__all__` for the episode, without
saying whether a time limit ended it. Each family of tasks says so here:

- MPE (`MPE_*`): the only end is the time limit (`max_steps`, 25 by
  default), a truncation: discounts stay 1. The global state is every
  agent's observation, concatenated in agent order, as JaxMARL's MAPPO
  baseline builds it for MPE (its `MPEWorldStateWrapper`).
- SMAX (`SMAX` with `env.kwargs.scenario` a map name such as `"3m"`, and
  `HeuristicEnemySMAX`): an agent's `done` is its unit's death, a
  termination of its part; the episode terminates when a team is all dead,
  and is truncated at `max_steps` otherwise. The global state is SMAX's
  `world_state`.
- Overcooked (`overcooked`, `env.kwargs.layout` one of JaxMARL's layout
  names such as `"cramped_room"`): the only
  end is the time limit (400 steps), a truncation; the global state is both
  agents' observations, flattened and concatenated.
- Hanabi (`hanabi`): turns alternate, and each agent's legal moves
  (JaxMARL's `get_legal_moves`) leave the agent not to move only its no-op;
  the game's end (`terminal`: the deck played out, the lives lost or a
  perfect score) terminates the episode. The global state is every hand's
  observation, concatenated.

Other JaxMARL tasks follow as their ends are written down here.
"""

import contextlib
import dataclasses
import functools
import re
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
from dm_env import specs

with contextlib.redirect_stdout(sys.stdout), contextlib.redirect_stderr(sys.stderr):
    # JaxMARL's MABrax module sets sys.stdout and sys.stderr back to the process's own when it is imported, which
    # would take a notebook's output, or anything else that captures it, away; both are put back as they were.
    import jaxmarl

from podracer.envs import multi_agent
from podracer.envs.actions import ACTION_MASK, GLOBAL_STATE
from podracer.envs.spaces import space_to_spec
from podracer.envs.timestep import TimeStep

__all__ = ["JaxMarlEnvironment", "JaxMarlState", "is_task", "make", "task_names"]

Settings = tuple[tuple[str, Any], ...]  # Keyword arguments, hashable.


class JaxMarlState(NamedTuple):
    env_state: Any  # JaxMARL's own state.
    key: chex.PRNGKey  # For the next step's randomness (JaxMARL's `step_env` takes a key).


class Ends(NamedTuple):
    """How a family of JaxMARL tasks ends, read from the state after a step and JaxMARL's `dones`; what its critic
    reads; and where its legal actions come from."""

    agent_terminated: Callable[[Any, Any, dict, list], chex.Array]  # (env, state, dones, agents) -> [N] bool.
    terminated: Callable[[Any, Any], chex.Array]  # (env, state) -> bool: the episode reached a terminal state.
    global_state: Callable[[Any, list], chex.Array]  # (observations, agents) -> the state a centralised critic reads.
    # (env, state) -> {agent: [A]} legal actions; None: JaxMARL's `get_avail_actions`, where the task has one.
    legal_actions: Callable[[Any, Any], dict] | None = None


def _every_observation(observations: dict, agents: list) -> chex.Array:
    """Every agent's observation, flattened and concatenated in agent order (JaxMARL's MPE world state)."""
    return jnp.concatenate([observations[agent].reshape(-1) for agent in agents])


def _no_agent_ends(env: Any, state: Any, dones: dict, agents: list) -> chex.Array:
    return jnp.zeros((len(agents),), bool)


_ONLY_A_TIME_LIMIT = Ends(  # No terminal state: JaxMARL's `done` is the time limit, a truncation.
    agent_terminated=_no_agent_ends, terminated=lambda env, state: jnp.bool_(False), global_state=_every_observation
)


def _smax_team_dead(env: Any, state: Any) -> chex.Array:
    alive = getattr(state, "state", state).unit_alive  # HeuristicEnemySMAX wraps SMAX's state.
    return ~jnp.any(alive[: env.num_allies]) | ~jnp.any(alive[env.num_allies :])


_SMAX = Ends(
    agent_terminated=lambda env, state, dones, agents: jnp.stack([dones[agent] for agent in agents]),
    terminated=_smax_team_dead,
    global_state=lambda observations, agents: observations["world_state"],
)
FAMILIES: dict[str, Ends] = {  # A task's family: its own name, or else the first name it starts with.
    "MPE_": _ONLY_A_TIME_LIMIT,
    "SMAX": _SMAX,
    "HeuristicEnemySMAX": _SMAX,
    "overcooked": _ONLY_A_TIME_LIMIT,
    "hanabi": Ends(
        agent_terminated=_no_agent_ends,
        terminated=lambda env, state: state.terminal,  # The game is over; it has no time limit.
        global_state=_every_observation,
        legal_actions=lambda env, state: env.get_legal_moves(state),  # Only the player to move has more than no-op.
    ),
}


def _family(task: str) -> Ends | None:
    return FAMILIES.get(task) or next((ends for name, ends in FAMILIES.items() if task.startswith(name)), None)


@dataclasses.dataclass(frozen=True)
class JaxMarlEnvironment(multi_agent.MultiAgentEnvironment):
    """JaxMARL's `task` under podracer's multi-agent contract; build it with `make`."""

    task: str
    settings: Settings = ()

    @property
    def suite_env(self) -> Any:
        """JaxMARL's environment object (shared by equal adapters)."""
        return _jaxmarl_env(self.task, self.settings)

    @property
    def agents(self) -> list[str]:
        return list(self.suite_env.agents)

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    @property
    def team_members(self) -> dict[str, list[str]] | None:
        """The agents by team where their spaces differ (`team_of` their names), in JaxMARL's order; None where
        all are alike."""
        return _team_members(self.task, self.settings)

    @property
    def teams(self) -> dict[str, int] | None:
        members = self.team_members
        return None if members is None else {team: len(agents) for team, agents in members.items()}

    def reset(self, key: chex.PRNGKey) -> tuple[JaxMarlState, TimeStep]:
        key, reset_key = jax.random.split(key)
        observations, env_state = self.suite_env.reset(reset_key)
        return JaxMarlState(env_state, key), multi_agent.restart(
            self._observation(observations, env_state), multi_agent.agent_layout(self)
        )

    def step(self, state: JaxMarlState, action: Any) -> tuple[JaxMarlState, TimeStep]:
        key, step_key = jax.random.split(state.key)
        observations, env_state, rewards, dones, _ = self.suite_env.step_env(
            step_key, state.env_state, self._by_agent(action)
        )
        ends = _family(self.task)
        terminated = ends.terminated(self.suite_env, env_state)
        agent_terminated = ends.agent_terminated(self.suite_env, env_state, dones, self.agents)
        timestep = multi_agent.transition(
            self._observation(observations, env_state),
            self._stacked(rewards),
            self._stacked(dict(zip(self.agents, agent_terminated, strict=True))),
            terminated,
            dones["__all__"] & ~terminated,
        )
        return JaxMarlState(env_state, key), timestep

    def _stacked(self, by_agent: dict) -> Any:
        """Values by agent name stacked on the agent axis, or on each team's."""
        if self.team_members is None:
            return jnp.stack([by_agent[agent] for agent in self.agents])
        return {team: jnp.stack([by_agent[a] for a in agents]) for team, agents in self.team_members.items()}

    def _by_agent(self, action: Any) -> dict:
        """podracer's actions (`[N, ...]`, or by team) by JaxMARL's agent names."""
        if self.team_members is None:
            return {agent: action[i] for i, agent in enumerate(self.agents)}
        return {a: action[team][i] for team, agents in self.team_members.items() for i, a in enumerate(agents)}

    def _observation(self, observations: dict, env_state: Any) -> dict:
        observation = {
            multi_agent.LOCAL: self._stacked(observations),
            GLOBAL_STATE: _family(self.task).global_state(observations, self.agents),
        }
        legal_actions = _family(self.task).legal_actions
        if legal_actions is None and _has_action_masks(self.suite_env):
            legal_actions = type(self.suite_env).get_avail_actions
        if legal_actions is not None:
            available = legal_actions(self.suite_env, env_state)
            observation[ACTION_MASK] = jax.tree.map(lambda mask: mask.astype(bool), self._stacked(available))
        return observation

    def observation_spec(self) -> dict:
        return jax.tree.map(
            lambda x: specs.Array(x.shape, x.dtype, name="observation"),
            jax.eval_shape(lambda key: self.reset(key)[1].observation, jax.random.key(0)),
        )

    def action_spec(self) -> Any:
        if self.team_members is None:
            return _action_spec(self.suite_env.action_space(self.agents[0]), self.num_agents)
        return {
            team: _action_spec(self.suite_env.action_space(agents[0]), len(agents))
            for team, agents in self.team_members.items()
        }


def _action_spec(space: Any, agents: int) -> specs.BoundedArray:
    """The actions of `agents` agents of JaxMARL's action `space` (int32 ids, or float32 reals), stacked."""
    return multi_agent.stacked_action_spec(space_to_spec(space, "action", float32=True), agents)


def team_of(agent: str) -> str:
    """An agent's team: its name without the trailing index (`adversary_1` is of team `adversary`)."""
    return re.sub(r"_\d+$", "", agent)


@functools.lru_cache(maxsize=32)
def _team_members(task: str, settings: Settings) -> dict[str, list[str]] | None:
    """The agents by team (`team_of`) where their spaces differ, None where they are all alike. Raises
    `ValueError` where one team's agents differ: they could not share its stacked axis."""
    env = _jaxmarl_env(task, settings)
    spaces = {agent: _space_shapes(env, agent) for agent in env.agents}
    if len(set(spaces.values())) == 1:
        return None
    members: dict[str, list[str]] = {}
    for agent in env.agents:
        members.setdefault(team_of(agent), []).append(agent)
    for team, agents in members.items():
        if len({spaces[agent] for agent in agents}) > 1:
            raise ValueError(f"jaxmarl:{task}'s {team} agents differ in their spaces: {[spaces[a] for a in agents]}")
    return members


def _space_shapes(env: Any, agent: str) -> tuple:
    """What must be equal for agents to share an axis: their observation's shape and their action space's."""
    action = env.action_space(agent)
    return env.observation_space(agent).shape, getattr(action, "n", None), getattr(action, "shape", None)


def _has_action_masks(env: Any) -> bool:
    """Whether JaxMARL's task gives legal actions (its base class raises `NotImplementedError` otherwise)."""
    return type(env).get_avail_actions is not jaxmarl.environments.MultiAgentEnv.get_avail_actions


def is_task(task: str) -> bool:
    return task in jaxmarl.registered_envs and _family(task) is not None


def task_names() -> list[str]:
    return [task for task in jaxmarl.registered_envs if _family(task) is not None]


def make(task: str, **kwargs: Any) -> JaxMarlEnvironment:
    """The adapter of JaxMARL's `task`; `kwargs` are JaxMARL's (`scenario` of SMAX is a map name such as `"3m"`,
    `layout` of Overcooked a layout's name such as `"cramped_room"`).

    Agents of different kinds come in teams (`team_members`); raises `ValueError` where one team's agents differ.
    """
    env = JaxMarlEnvironment(task, tuple(sorted(kwargs.items())))
    _team_members(task, env.settings)
    return env


@functools.lru_cache(maxsize=32)
def _jaxmarl_env(task: str, settings: Settings) -> Any:
    """JaxMARL's environment object, built once per task and keyword arguments."""
    kwargs = dict(settings)
    if isinstance(kwargs.get("scenario"), str):
        from jaxmarl.environments.smax import map_name_to_scenario

        kwargs["scenario"] = map_name_to_scenario(kwargs["scenario"])
    if isinstance(kwargs.get("layout"), str):
        from jaxmarl.environments.overcooked import overcooked_layouts

        if kwargs["layout"] not in overcooked_layouts:
            raise ValueError(
                f"Overcooked has no layout {kwargs['layout']!r}; choose one of {sorted(overcooked_layouts)}"
            )
        kwargs["layout"] = overcooked_layouts[kwargs["layout"]]
    return jaxmarl.make(task, **kwargs)
