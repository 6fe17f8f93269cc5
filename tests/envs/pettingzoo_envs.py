"""A tiny PettingZoo parallel environment for the tests: `pettingzoo:tests.envs.pettingzoo_envs`.

Agents leave one by one and the time limit cuts the rest, which MPE never
does; observations carry action masks, and there is no `state()`. Everything
is a function of the actions, so a test can tell which steps and which
agents' actions the environment really took. `parallel_env(how=...)` makes
one that fails in its worker instead (`Crashing`).
"""

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from tests.envs.gymnasium_envs import crash

LEAVE = 2  # The action with which an agent ends its own part: a termination.


class Leavers(ParallelEnv):
    """Agents observe [steps taken, their own sum of actions] and their legal actions (all but `LEAVE` at step 0).

    Reward `10 * steps + action` each; an agent playing `LEAVE` terminates, and
    the episode is truncated after `limit` steps for those still in.
    """

    metadata = {"name": "leavers_v0"}

    def __init__(self, agents: int = 2, limit: int = 4):
        self.possible_agents = [f"agent_{i}" for i in range(agents)]
        self.limit = limit

    def observation_space(self, agent):
        box = spaces.Box(-1e6, 1e6, (2,), np.float32)
        return spaces.Dict({"observation": box, "action_mask": spaces.Box(0, 1, (3,), np.int8)})

    def action_space(self, agent):
        return spaces.Discrete(3)

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        self.steps, self.sums = 0, dict.fromkeys(self.agents, 0.0)
        return {agent: self._observe(agent) for agent in self.agents}, {agent: {} for agent in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents), f"actions for {sorted(actions)}, agents in {self.agents}"
        self.steps += 1
        for agent, action in actions.items():
            self.sums[agent] += int(action)
        rewards = {agent: 10.0 * self.steps + int(action) for agent, action in actions.items()}
        terminations = {agent: int(action) == LEAVE for agent, action in actions.items()}
        truncations = {agent: self.steps >= self.limit for agent in self.agents}
        observations = {agent: self._observe(agent) for agent in self.agents}
        self.agents = [agent for agent in self.agents if not (terminations[agent] or truncations[agent])]
        return observations, rewards, terminations, truncations, {agent: {} for agent in observations}

    def _observe(self, agent):
        mask = np.array([1, 1, self.steps > 0], np.int8)
        return {"observation": np.array([self.steps, self.sums[agent]], np.float32), "action_mask": mask}


class Crashing(Leavers):
    """`Leavers` whose environment seeded `crash_seed` fails on its step number `at_step` of an episode, as `how`
    says: as `gymnasium_envs.Crashing`."""

    def __init__(self, how: str, crash_seed: int, at_step: int = 2, **kwargs):
        super().__init__(**kwargs)
        self._how, self._crash_seed, self._at_step = how, crash_seed, at_step
        self._seed = None

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._seed = seed
        return super().reset(seed, options)

    def step(self, actions):
        if self._seed == self._crash_seed and self.steps + 1 == self._at_step:
            crash(self._how, self._at_step)
        return super().step(actions)


def parallel_env(how: str | None = None, **kwargs) -> Leavers:
    """`Leavers(**kwargs)`, or `Crashing(how, **kwargs)` where `how` is given."""
    return Leavers(**kwargs) if how is None else Crashing(how, **kwargs)
