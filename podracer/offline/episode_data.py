"""Episodes as a dataset stores them, and what a dataset records about how it was made.

An episode of T steps holds T + 1 observations (the first, and the one after
each step, the last included) and T actions, rewards, terminations and
truncations, Minari's layout (and D4RL's before it). Termination (the task
ended: no value after it) and truncation (a time limit cut the episode: the
value after it still counts) are kept apart, as dm_env's discount keeps them
(`podracer.envs.timestep`).
"""

import dataclasses
from typing import Any

import jax
import numpy as np


@dataclasses.dataclass
class Episode:
    """One whole episode: observations `[T + 1, ...]` (a nest of arrays), the rest `[T, ...]`."""

    observations: Any
    actions: np.ndarray
    rewards: np.ndarray  # float32 [T]: the reward after each action.
    terminations: np.ndarray  # bool [T]: True on the last step where the episode ended by itself.
    truncations: np.ndarray  # bool [T]: True on the last step where a time limit cut it.

    def __post_init__(self):
        steps = len(self.actions)
        lengths = {len(x) for x in jax.tree.leaves(self.observations)}
        if lengths != {steps + 1} or not len(self.rewards) == len(self.terminations) == len(self.truncations) == steps:
            raise ValueError(
                f"an episode of {steps} actions needs {steps + 1} observations and {steps} rewards, terminations "
                f"and truncations; got {sorted(lengths)}, {len(self.rewards)}, {len(self.terminations)} and "
                f"{len(self.truncations)}"
            )

    @property
    def steps(self) -> int:
        return len(self.actions)

    @property
    def episode_return(self) -> float:
        return float(np.sum(self.rewards, dtype=np.float64))


def mean_return(episodes: list[Episode]) -> float:
    """The mean undiscounted return of `episodes` (NaN for none)."""
    return float(np.mean([episode.episode_return for episode in episodes])) if episodes else float("nan")
