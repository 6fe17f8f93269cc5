"""A dataset as one training run holds it: its episodes laid back to back as rows, and checked against the env.

Row k holds one observation and, unless it is its episode's last, the action
taken there and what followed: the reward, and whether the episode ended
there by termination or truncation. Transition k goes from row k to row
k + 1; an episode's last row starts none (`transition_rows` lists the rows
that do). Each observation is held once, not again as the next transition's
"next observation", which halves the memory of a dataset of frames.
"""

import dataclasses
from typing import Any

import jax
import numpy as np
from dm_env import specs

from podracer.config.errors import ConfigError
from podracer.offline.episode_data import Episode, mean_return


@dataclasses.dataclass(frozen=True)
class Dataset:
    """Rows `[R, ...]` of whole episodes, back to back; `transition_rows` `[N]` the rows a transition starts at."""

    observation: Any  # A nest of arrays [R, ...].
    action: np.ndarray  # [R, ...]: zeros on an episode's last row.
    reward: np.ndarray  # float32 [R]
    terminated: np.ndarray  # bool [R]
    truncated: np.ndarray  # bool [R]
    transition_rows: np.ndarray  # int32 [N]
    observation_spec: Any
    action_spec: Any
    metadata: dict
    episodes: int
    mean_return: float

    @property
    def rows(self) -> int:
        return len(self.reward)

    @property
    def transitions(self) -> int:
        return len(self.transition_rows)

    def arrays(self) -> dict:
        """The row arrays, as the devices hold them (`podracer.offline.sampling`)."""
        return {
            "observation": self.observation,
            "action": self.action,
            "reward": self.reward,
            "terminated": self.terminated,
            "truncated": self.truncated,
        }


def from_episodes(episodes: list[Episode], observation_spec: Any, action_spec: Any, metadata: dict) -> Dataset:
    """The rows of `episodes` (in their order), cast to the specs' dtypes."""

    def rows(field: str, pad: bool) -> np.ndarray:  # A field of every episode; `pad` adds its last row's zero.
        parts = []
        for episode in episodes:
            value = np.asarray(getattr(episode, field))
            parts += [value, np.zeros((1, *value.shape[1:]), value.dtype)] if pad else [value]
        return np.concatenate(parts)

    observation = jax.tree.map(
        lambda spec, *parts: np.concatenate(parts).astype(spec.dtype),
        observation_spec,
        *(episode.observations for episode in episodes),
    )
    starts = np.cumsum([0] + [episode.steps + 1 for episode in episodes])[:-1]
    transition_rows = np.concatenate(
        [start + np.arange(episode.steps) for start, episode in zip(starts, episodes, strict=True)]
    )
    return Dataset(
        observation=observation,
        action=rows("actions", pad=True).astype(action_spec.dtype),
        reward=rows("rewards", pad=True).astype(np.float32),
        terminated=rows("terminations", pad=True).astype(bool),
        truncated=rows("truncations", pad=True).astype(bool),
        transition_rows=transition_rows.astype(np.int32),
        observation_spec=observation_spec,
        action_spec=action_spec,
        metadata=metadata,
        episodes=len(episodes),
        mean_return=mean_return(episodes),
    )


def describe(spec: Any) -> str:
    """A spec (or a nest of them) as shapes and dtypes: `float32[3]`, `{'board': uint8[10, 10, 4]}`, `4 actions`."""
    if isinstance(spec, dict):
        return "{" + ", ".join(f"{key!r}: {describe(value)}" for key, value in spec.items()) + "}"
    if isinstance(spec, specs.DiscreteArray):
        return f"{spec.num_values} actions"
    return f"{np.dtype(spec.dtype).name}{list(spec.shape)}"


def _as_float32(spec: Any) -> Any:
    """`spec` with floating-point leaves float32: D4RL's float64 observations are read into JAX's float32."""
    if isinstance(spec, dict):
        return {key: _as_float32(value) for key, value in spec.items()}
    if np.issubdtype(spec.dtype, np.floating) and not isinstance(spec, specs.DiscreteArray):
        return specs.Array(spec.shape, np.float32)
    return spec


def check_specs(path: str, theirs: tuple, ours: tuple) -> None:
    """A `ConfigError` naming `offline.dataset` and both specs where the dataset's `(observation, action)` specs are not
    the environment's: shapes, dtypes (any floating-point one reads as float32), the number of discrete actions;
    not bounds."""
    for what, their_spec, our_spec in zip(("observations", "actions"), theirs, ours, strict=True):
        if describe(_as_float32(their_spec)) != describe(_as_float32(our_spec)):
            raise ConfigError(
                "offline.dataset",
                f"{path}'s {what} are {describe(their_spec)}, and env.name's are {describe(our_spec)}",
                "record the dataset on the config's environment, or set env.name to the dataset's",
            )
