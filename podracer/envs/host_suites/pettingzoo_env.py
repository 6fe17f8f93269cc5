"""PettingZoo's parallel environments of several agents as a Sebulba host environment: `pettingzoo:mpe2.simple_spread_v3`.

`make("mpe2.simple_spread_v3", num_envs=16, seed=0, **kwargs)` (in a config,
`env.name = "pettingzoo:mpe2.simple_spread_v3"`) imports the module and builds
`num_envs` copies with its `parallel_env(**kwargs)`: PettingZoo's parallel API
(Terry et al., NeurIPS 2021), as MPE2, SISL and Butterfly ship their tasks.
Any module with a `parallel_env`, your own included, works the same.
Environment i is seeded `seed + i` on the first `reset`; later resets continue
its random stream.

The batch keeps podracer's multi-agent contract (`podracer.envs.multi_agent`)
behind a leading batch axis, agents in `possible_agents` order: an observation
dict of `LOCAL` `[B, N, ...]`, `GLOBAL_STATE` `[B, ...]` and, where each
agent observes a Dict of "observation" and "action_mask" (PettingZoo's
convention for legal actions), `ACTION_MASK` `[B, N, A]`; actions, rewards and
discounts `[B, N]`; one step type per environment. Only homogeneous agents
stack: their observation and action spaces must be equal (a `ConfigError`
naming `env.name` otherwise).

- The global state is PettingZoo's own `state()` where the environment has a
  `state_space`, and every agent's observation flattened and concatenated in
  agent order where it has none: JaxMARL's MPE world state. For MPE the two
  are the same.
- An agent whose termination flag rises has discount 0 from then until the
  episode ends; one whose truncation flag rises has discount 1 (a time limit).
  The episode ends when PettingZoo has no agent left (`env.agents` empty): it
  terminated if every agent terminated, and was truncated otherwise. An agent
  out while others play on keeps its last observation, gets reward 0, and its
  actions are not sent.
- The step that ends an episode is LAST with its real last observations; the
  next step resets that environment, ignores its actions and is FIRST (reward
  0, discount 1), as every host environment of podracer (`podracer.envs.host`).

The environments are stepped one after another in the calling thread, an
actor thread: MPE's step costs about 0.2 ms for three agents, so a thread's
batch of 16 takes about 3 ms.
"""

import pkgutil
import re
from importlib.util import find_spec
from typing import Any

import numpy as np
from dm_env import specs

from podracer.config.errors import ConfigError
from podracer.envs import multi_agent, spaces
from podracer.envs.actions import ACTION_MASK, GLOBAL_STATE
from podracer.envs.host import HostEnvironment, check_num_envs, import_if_present
from podracer.envs.multi_agent import LOCAL
from podracer.envs.timestep import TimeStep

__all__ = ["PettingZooEnvironment", "is_task", "make", "task_names"]

MASKED = ("observation", "action_mask")  # The keys of an observation that carries its legal actions.


def is_task(task: str) -> bool:
    """Whether `task` is an importable module with a `parallel_env`."""
    module = import_if_present(task) if isinstance(task, str) else None
    return callable(getattr(module, "parallel_env", None))


def task_names() -> list[str]:
    """MPE2's tasks where it is installed (for hints); any module with a `parallel_env` is a task."""
    spec = find_spec("mpe2")
    if spec is None:
        return []
    modules = pkgutil.iter_modules(spec.submodule_search_locations)
    return sorted(f"mpe2.{module.name}" for module in modules if re.search(r"_v\d+$", module.name))


def make(task: str, num_envs: int, seed: int, **kwargs: Any) -> "PettingZooEnvironment":
    """`num_envs` copies of PettingZoo's parallel environment `task` (a module path); see `PettingZooEnvironment`."""
    return PettingZooEnvironment(task, num_envs, seed, **kwargs)


class PettingZooEnvironment(multi_agent.MultiAgent, HostEnvironment):
    """A batch of PettingZoo parallel environments of homogeneous agents as a `HostEnvironment`: numpy `[B, N, ...]`."""

    def __init__(self, task: str, num_envs: int, seed: int, **kwargs: Any):
        """Builds `num_envs` environments with `task`'s `parallel_env(**kwargs)`; reads their specs, steps nothing."""
        if not is_task(task):
            raise ValueError(f"{task!r} is not an importable module with a PettingZoo parallel_env")
        self.name: str = task
        self.num_envs: int = check_num_envs(num_envs)
        self._seed = int(seed)
        parallel_env = import_if_present(task).parallel_env
        self._envs = [parallel_env(**kwargs) for _ in range(self.num_envs)]
        env = self._envs[0]
        self.agents: list = list(env.possible_agents)
        observation_space, action_space = homogeneous_spaces(task, env)
        self._masked = type(observation_space).__name__ == "Dict" and set(observation_space.spaces) == set(MASKED)
        local = spaces.array_spec(observation_space[MASKED[0]] if self._masked else observation_space, LOCAL)
        self._action_spec = spaces.action_spec(action_space)
        self._action_dtype = np.dtype(action_space.dtype)
        self._has_state = hasattr(env, "state_space")
        n, b = self.num_agents, self.num_envs
        self._observation_spec = {LOCAL: local.replace(shape=(n, *local.shape))}
        self._local = np.zeros((b, n, *local.shape), local.dtype)
        if self._has_state:
            self._observation_spec[GLOBAL_STATE] = spaces.array_spec(env.state_space, GLOBAL_STATE)
            self._state = np.zeros((b, *env.state_space.shape), env.state_space.dtype)
        else:
            self._observation_spec[GLOBAL_STATE] = specs.Array(
                (n * int(np.prod(local.shape)),), local.dtype, GLOBAL_STATE
            )
        if self._masked:
            self._observation_spec[ACTION_MASK] = specs.Array((n, self._action_spec.num_values), bool, ACTION_MASK)
            self._mask = np.zeros((b, n, self._action_spec.num_values), bool)
        self._agent_terminated = np.zeros((b, n), bool)  # Sticky until the episode ends.
        self._done = np.zeros(b, bool)  # These ended an episode on the last step: next is FIRST.
        self._started = False

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    def observation_spec(self) -> dict:
        """One environment's observation (no batch axis): `LOCAL` `[N, ...]`, `GLOBAL_STATE`, maybe `ACTION_MASK`."""
        return self._observation_spec

    def action_spec(self) -> specs.BoundedArray:
        """One environment's actions `[N]` (ids in [0, n)) or `[N, ...]` (floats within the Box's bounds)."""
        return multi_agent.stacked_action_spec(self._action_spec, self.num_agents)

    def reset(self) -> TimeStep:
        """Starts a new episode in every environment: a FIRST timestep."""
        for index in range(self.num_envs):
            self._restart(index, None if self._started else self._seed + index)
        self._started = True
        self._done[:] = False
        zeros = np.zeros((self.num_envs, self.num_agents))
        return self._timestep(zeros, np.zeros(self.num_envs, bool), np.ones(self.num_envs, bool))

    def step(self, action: Any) -> TimeStep:
        """Steps every environment with its agents' actions `[B, N, ...]`; those whose last step was LAST start anew."""
        if not self._started:
            raise RuntimeError("Call reset() before step().")
        action = self._check(action)
        first, ended = self._done.copy(), np.zeros(self.num_envs, bool)
        reward = np.zeros((self.num_envs, self.num_agents))
        for index, env in enumerate(self._envs):
            if first[index]:
                self._restart(index, None)
                continue
            live = {agent: action[index, j] for j, agent in enumerate(self.agents) if agent in env.agents}
            observations, rewards, terminations, _, _ = env.step(live)
            self._observe(index, observations)
            reward[index] = [rewards.get(agent, 0.0) for agent in self.agents]
            self._agent_terminated[index] |= [terminations.get(agent, False) for agent in self.agents]
            ended[index] = not env.agents
        self._done = ended
        return self._timestep(reward, ended, first)

    def close(self) -> None:
        """Closes every environment."""
        for env in self._envs:
            env.close()

    def __repr__(self) -> str:
        return f"PettingZooEnvironment({self.name!r}, num_envs={self.num_envs}, num_agents={self.num_agents})"

    def _restart(self, index: int, seed: int | None) -> None:
        observations, _ = self._envs[index].reset(seed=seed)
        self._agent_terminated[index] = False
        self._observe(index, observations)

    def _observe(self, index: int, observations: dict) -> None:
        """Writes environment `index`'s agents' observations (and the state) into the batch's buffers."""
        for j, agent in enumerate(self.agents):
            if agent in observations:
                observation = observations[agent]
                self._local[index, j] = observation[MASKED[0]] if self._masked else observation
                if self._masked:
                    self._mask[index, j] = observation[MASKED[1]]
        if self._has_state:
            self._state[index] = self._envs[index].state()

    def _timestep(self, reward: np.ndarray, ended: np.ndarray, first: np.ndarray) -> TimeStep:
        """The batch's timestep from the buffers (copied: the next step writes them again)."""
        observation = {LOCAL: self._local.copy()}
        observation[GLOBAL_STATE] = (
            self._state.copy() if self._has_state else observation[LOCAL].reshape(self.num_envs, -1)
        )
        if self._masked:
            observation[ACTION_MASK] = self._mask.copy()
        terminated = ended & self._agent_terminated.all(axis=1)
        truncated = ended & ~terminated
        return multi_agent.transition(observation, reward, self._agent_terminated, terminated, truncated, first, xp=np)

    def _check(self, action: Any) -> np.ndarray:
        """`action` `[B, N, ...]` checked as `spaces.check_actions` checks one agent's, in the space's dtype."""
        action = np.asarray(action)
        expected = (self.num_envs, *self.action_spec().shape)
        if action.shape != expected:
            raise ValueError(f"Expected actions of shape {expected}, got {action.shape}.")
        flat = action.reshape((-1, *self._action_spec.shape))
        spaces.check_actions(flat, self._action_spec, len(flat))
        return action.astype(self._action_dtype, copy=False)


def homogeneous_spaces(task: str, env: Any) -> tuple[Any, Any]:
    """The observation and action spaces every agent of `env` shares; a `ConfigError` on `env.name` if they differ."""
    agents = env.possible_agents
    observation_space, action_space = env.observation_space(agents[0]), env.action_space(agents[0])
    differing = [
        agent
        for agent in agents
        if env.observation_space(agent) != observation_space or env.action_space(agent) != action_space
    ]
    if differing:
        raise ConfigError(
            "env.name",
            f"pettingzoo:{task}'s agents {differing} observe or act differently from {agents[0]}",
            "podracer stacks homogeneous agents on one axis: choose an environment whose agents share their spaces",
        )
    return observation_space, action_space
