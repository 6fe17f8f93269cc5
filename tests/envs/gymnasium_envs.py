"""Tiny deterministic Gymnasium environments for the tests of `envs.host_suites.gymnasium_env` and `worker_pool`.

They live apart from the test modules so that the worker processes, which
import an entry point's module, import only Gymnasium and numpy here (the test
modules import podracer and JAX: seconds for every worker). The test modules
register them.
"""

import os
import sys
import threading
import time

import gymnasium
import numpy as np
from gymnasium import spaces

TERMINAL_ACTION = 2


class Counter(gymnasium.Env):
    """Observes [steps taken, sum of actions, a start value drawn at reset]; reward `10 * steps + action`.

    Discrete actions 0, 1, 2 (2 terminates the episode) or, with
    `continuous=True`, a Box of 2 floats in [-1, 1] (summed; never
    terminates). Everything but the start value is a function of the actions,
    so a test can tell which steps the environment really took.
    """

    def __init__(self, continuous: bool = False):
        self.observation_space = spaces.Box(-1e6, 1e6, (3,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32) if continuous else spaces.Discrete(3)
        self._continuous = continuous

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._start = float(self.np_random.integers(0, 1000))
        self._steps, self._sum = 0, 0.0
        return self._observation(), {}

    def step(self, action):
        value = float(np.sum(action)) if self._continuous else int(action)
        self._steps += 1
        self._sum += value
        terminated = not self._continuous and value == TERMINAL_ACTION
        return self._observation(), 10.0 * self._steps + value, terminated, False, {}

    def _observation(self):
        return np.array([self._steps, self._sum, self._start], np.float32)

    def imported(self, module: str) -> bool:
        """Whether this process has imported `module` (called in the workers)."""
        return module in sys.modules


class DictCounter(Counter):
    """`Counter` observing a dict: {"count": [steps, sum], "start": [start]}."""

    def __init__(self):
        super().__init__()
        self.observation_space = spaces.Dict(
            {"count": spaces.Box(-1e6, 1e6, (2,), np.float32), "start": spaces.Box(0, 1000, (1,), np.float32)}
        )

    def _observation(self):
        return {"count": np.array([self._steps, self._sum], np.float32), "start": np.array([self._start], np.float32)}


class Crashing(Counter):
    """`Counter` whose environment seeded `crash_seed` fails on its step number `at_step`, in the way `how` says.

    "raise": raises ValueError; "unpicklable": raises an exception holding a
    lock, which cannot travel to the parent; "exit": `os._exit(3)`; "hang":
    sleeps for a minute.
    """

    def __init__(self, how: str, crash_seed: int, at_step: int = 2):
        super().__init__()
        self._how, self._crash_seed, self._at_step = how, crash_seed, at_step
        self._seed = None

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._seed = seed
        return super().reset(seed=seed, options=options)

    def step(self, action):
        if self._seed == self._crash_seed and self._steps + 1 == self._at_step:
            crash(self._how, self._at_step)
        return super().step(action)


def crash(how: str, at_step: int) -> None:
    """Fails as `how` says (see `Crashing`), at step `at_step`."""
    if how == "raise":
        raise ValueError(f"boom at step {at_step}")
    if how == "unpicklable":
        raise ValueError("holds a lock", threading.Lock())
    if how == "exit":
        os._exit(3)
    if how == "hang":
        time.sleep(60)


class DiscreteObservation(Counter):
    """Observes an integer: not an array space, which host environments refuse."""

    def __init__(self):
        super().__init__()
        self.observation_space = spaces.Discrete(5)


class CuedCorridor(gymnasium.Env):
    """Start in the middle of 7 cells; a cue drawn at reset says which end pays +1 (the other pays -1).

    Observation: the position one-hot, then the cue one-hot (left, right).
    Actions: 0 steps left, 1 steps right; either end terminates. A random walk
    scores 0 on average (less under a time limit), a policy that reads the cue 1.
    """

    length = 7

    def __init__(self):
        self.observation_space = spaces.Box(0.0, 1.0, (self.length + 2,), np.float32)
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._position, self._goal_is_right = self.length // 2, bool(self.np_random.integers(2))
        return self._observation(), {}

    def step(self, action):
        self._position += 1 if int(action) == 1 else -1
        at_end = self._position in (0, self.length - 1)
        reached_goal = self._position == (self.length - 1 if self._goal_is_right else 0)
        reward = (1.0 if reached_goal else -1.0) if at_end else 0.0
        return self._observation(), reward, at_end, False, {}

    def _observation(self):
        observation = np.zeros(self.length + 2, np.float32)
        observation[self._position] = 1.0
        observation[self.length + int(self._goal_is_right)] = 1.0
        return observation
