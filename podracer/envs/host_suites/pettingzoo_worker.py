"""One PettingZoo parallel environment as a Gymnasium environment, so that `worker_pool` can step it in a worker.

`make(task, **kwargs)` runs in a worker process: it builds `task`'s
`parallel_env(**kwargs)` and wraps it in `StackedAgents`, whose observation
is the environment's row of `pettingzoo_env`'s batch, every agent stacked in
`possible_agents` order. The vector environment batches those rows in shared
memory, and its NEXT_STEP autoreset restarts an environment on the step after
its episode ended, as podracer's FIRST steps need (`podracer.envs.host`).
`pettingzoo_env` turns the batch into podracer's multi-agent timesteps; what
the agents' flags and rewards mean is documented there.

This module is sent to the workers by value (`cloudpickle.register_pickle_by_value`
below), so a worker imports PettingZoo, Gymnasium, numpy and the task's
module, never podracer, which would also import JAX. Keep it free of podracer
imports; `pettingzoo_env` checks the agents' spaces (the same for every agent)
before any worker starts.
"""

import importlib
import sys
from typing import Any

import cloudpickle
import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space

# The keys of a row. Its Gymnasium reward and flags are the episode's; the agents' own travel in the row.
LOCAL, STATE, ACTION_MASK = "local", "state", "action_mask"
REWARD, AGENT_TERMINATED = "reward", "agent_terminated"
MASKED = ("observation", "action_mask")  # The keys of an agent's observation that carries its legal actions.


def make(task: str, **kwargs: Any) -> "StackedAgents":
    """`task`'s `parallel_env(**kwargs)` (`task` an importable module path) as a `StackedAgents`."""
    return StackedAgents(importlib.import_module(task).parallel_env(**kwargs))


def is_masked(observation_space: Any) -> bool:
    """Whether an agent's observation space is PettingZoo's Dict of "observation" and "action_mask"."""
    return isinstance(observation_space, spaces.Dict) and set(observation_space.spaces) == set(MASKED)


class StackedAgents(gymnasium.Env):
    """A PettingZoo parallel environment whose agents share their spaces, as one Gymnasium environment.

    Its observation is a dict: `LOCAL` `[N, ...]` (an agent out of the episode
    keeps its last observation), `STATE` (the environment's `state()`, where
    it has a `state_space`), `ACTION_MASK` `[N, A]` (0 or 1, where the agents
    observe Dicts of "observation" and "action_mask"), `REWARD` `[N]` (0 for an
    agent out) and `AGENT_TERMINATED` `[N]` (1 from an agent's termination
    until the episode ends). Its action is every agent's, `[N, ...]`; an
    agent out of the episode is not sent its own. The episode ends when
    PettingZoo has no agent left: terminated if every agent terminated, and
    truncated otherwise. The Gymnasium reward is the agents' sum.
    """

    def __init__(self, env: Any):
        self.env = env
        self.agents: list = list(env.possible_agents)
        n = len(self.agents)
        observation_space, action_space = env.observation_space(self.agents[0]), env.action_space(self.agents[0])
        self._masked = is_masked(observation_space)
        local_space = observation_space[MASKED[0]] if self._masked else observation_space
        row = {
            LOCAL: batch_space(local_space, n),
            REWARD: spaces.Box(-np.inf, np.inf, (n,), np.float64),
            AGENT_TERMINATED: spaces.MultiBinary(n),
        }
        self._has_state = hasattr(env, "state_space")
        if self._has_state:
            row[STATE] = env.state_space
        if self._masked:
            row[ACTION_MASK] = spaces.MultiBinary((n, int(action_space.n)))
        self.observation_space = spaces.Dict(row)
        self.action_space = batch_space(action_space, n)
        self.metadata = {"autoreset_mode": gymnasium.vector.AutoresetMode.NEXT_STEP}
        self._local = np.zeros(row[LOCAL].shape, row[LOCAL].dtype)
        self._mask = np.zeros((n, int(action_space.n)) if self._masked else (0,), np.int8)
        self._agent_terminated = np.zeros(n, np.int8)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """Resets the environment (seeded where `seed` is given); every agent in, rewards 0."""
        observations, _ = self.env.reset(seed=seed)
        self._agent_terminated[:] = 0
        return self._row(observations, np.zeros(len(self.agents))), {}

    def step(self, action: np.ndarray) -> tuple[dict, float, bool, bool, dict]:
        """Steps the agents still in with their actions (`action[j]` is agent j's)."""
        env = self.env
        live = {agent: action[j] for j, agent in enumerate(self.agents) if agent in env.agents}
        observations, rewards, terminations, _, _ = env.step(live)
        reward = np.array([rewards.get(agent, 0.0) for agent in self.agents], np.float64)
        self._agent_terminated |= [terminations.get(agent, False) for agent in self.agents]
        ended = not env.agents
        terminated = ended and bool(self._agent_terminated.all())
        return self._row(observations, reward), float(reward.sum()), terminated, ended and not terminated, {}

    def close(self) -> None:
        self.env.close()

    def _row(self, observations: dict, reward: np.ndarray) -> dict:
        """The row after the agents in `observations` observed them (the others keep their last)."""
        for j, agent in enumerate(self.agents):
            if agent in observations:
                observation = observations[agent]
                self._local[j] = observation[MASKED[0]] if self._masked else observation
                if self._masked:
                    self._mask[j] = np.asarray(observation[MASKED[1]]) != 0
        row = {LOCAL: self._local.copy(), REWARD: reward, AGENT_TERMINATED: self._agent_terminated.copy()}
        if self._has_state:
            row[STATE] = self.env.state()
        if self._masked:
            row[ACTION_MASK] = self._mask.copy()
        return row


cloudpickle.register_pickle_by_value(sys.modules[__name__])
