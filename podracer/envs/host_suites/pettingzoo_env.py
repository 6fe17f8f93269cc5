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

The environments step in worker processes, one each, `worker_pool`'s, which
Gymnasium's environments share: each worker holds one `parallel_env` as a
Gymnasium environment (`pettingzoo_worker.StackedAgents`), so PettingZoo's
Python steps run beside the actor threads rather than holding their GIL. As
Gymnasium's, workers start by "forkserver" or "spawn" (`context`), and a
worker that raises, dies or gives no answer within `step_timeout_seconds`
ends every worker with a `RuntimeError` naming the environment.
"""

import functools
import pkgutil
import re
from importlib.util import find_spec
from typing import Any

import numpy as np
from dm_env import specs
from gymnasium.vector import AutoresetMode

from podracer.config.errors import ConfigError
from podracer.envs import multi_agent, spaces
from podracer.envs.actions import ACTION_MASK, GLOBAL_STATE
from podracer.envs.host import HostEnvironment, check_num_envs, import_if_present
from podracer.envs.host_suites import pettingzoo_worker, worker_pool
from podracer.envs.multi_agent import LOCAL
from podracer.envs.timestep import TimeStep

__all__ = ["PettingZooEnvironment", "is_task", "make", "task_names"]


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

    def __init__(
        self,
        task: str,
        num_envs: int,
        seed: int,
        *,
        context: str | None = None,
        step_timeout_seconds: float = worker_pool.DEFAULT_STEP_TIMEOUT_SECONDS,
        vectorization_mode: str = "async",
        **kwargs: Any,
    ):
        """Reads the specs from one `parallel_env(**kwargs)` of `task`, then starts `num_envs` workers making theirs.

        `context` is the workers' start method, "forkserver" or "spawn"
        (default: forkserver where available); `step_timeout_seconds` how long
        `reset` and `step` wait for a worker before raising; `vectorization_mode`
        "sync" steps the environments in the calling thread instead of workers
        (`worker_pool`).
        """
        if not is_task(task):
            raise ValueError(f"{task!r} is not an importable module with a PettingZoo parallel_env")
        self.name: str = task
        self.num_envs: int = check_num_envs(num_envs)
        env = import_if_present(task).parallel_env(**kwargs)
        try:
            self._read_specs(task, env)
        finally:
            env.close()
        self._pool = worker_pool.WorkerPool(
            f"PettingZoo environment {task!r}",
            functools.partial(pettingzoo_worker.make, task),
            kwargs,
            self.num_envs,
            seed,
            autoreset_mode=AutoresetMode.NEXT_STEP,
            context=context,
            step_timeout_seconds=step_timeout_seconds,
            vectorization_mode=vectorization_mode,
        )
        self._done = np.zeros(self.num_envs, bool)  # These ended an episode on the last step: next is FIRST.

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
        row, _ = self._pool.reset()
        self._done = np.zeros(self.num_envs, bool)
        no = np.zeros(self.num_envs, bool)
        return self._timestep(row, no, no, np.ones(self.num_envs, bool))

    def step(self, action: Any) -> TimeStep:
        """Steps every environment with its agents' actions `[B, N, ...]`; those whose last step was LAST start anew."""
        row, _, terminated, truncated, _ = self._pool.step(self._check(action))
        first, self._done = self._done, terminated | truncated
        return self._timestep(row, terminated, truncated, first)

    def close(self) -> None:
        """Closes every environment and ends the worker processes; further calls do nothing."""
        self._pool.close()

    def __repr__(self) -> str:
        return f"PettingZooEnvironment({self.name!r}, num_envs={self.num_envs}, num_agents={self.num_agents})"

    def _read_specs(self, task: str, env: Any) -> None:
        """The agents, and one environment's observation and action specs, from `env`'s spaces."""
        self.agents: list = list(env.possible_agents)
        observation_space, action_space = homogeneous_spaces(task, env)
        masked = pettingzoo_worker.is_masked(observation_space)
        local = spaces.array_spec(
            observation_space[pettingzoo_worker.MASKED[0]] if masked else observation_space, LOCAL
        )
        self._action_spec = spaces.action_spec(action_space)
        self._action_dtype = np.dtype(action_space.dtype)
        n = self.num_agents
        self._observation_spec = {LOCAL: local.replace(shape=(n, *local.shape))}
        if hasattr(env, "state_space"):
            self._observation_spec[GLOBAL_STATE] = spaces.array_spec(env.state_space, GLOBAL_STATE)
        else:
            self._observation_spec[GLOBAL_STATE] = specs.Array(
                (n * int(np.prod(local.shape)),), local.dtype, GLOBAL_STATE
            )
        if masked:
            self._observation_spec[ACTION_MASK] = specs.Array((n, self._action_spec.num_values), bool, ACTION_MASK)

    def _timestep(self, row: dict, terminated: np.ndarray, truncated: np.ndarray, first: np.ndarray) -> TimeStep:
        """The batch's timestep from the workers' rows (`pettingzoo_worker.StackedAgents`'s observations)."""
        local = row[pettingzoo_worker.LOCAL]
        observation = {LOCAL: local}
        observation[GLOBAL_STATE] = row.get(pettingzoo_worker.STATE, local.reshape(self.num_envs, -1))
        if ACTION_MASK in self._observation_spec:
            observation[ACTION_MASK] = row[pettingzoo_worker.ACTION_MASK].astype(bool)
        reward, agent_terminated = row[pettingzoo_worker.REWARD], row[pettingzoo_worker.AGENT_TERMINATED].astype(bool)
        return multi_agent.transition(observation, reward, agent_terminated, terminated, truncated, first, xp=np)

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
