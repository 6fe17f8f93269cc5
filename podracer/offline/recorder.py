"""Cutting a batch of environments' steps into whole episodes, as they are played.

A batch steps with dm_env's auto-reset semantics (`podracer.envs.host`): the
step that ends an episode is LAST, with its final observation, and the step
after it is FIRST, the next episode's first observation, its action ignored.
`EpisodeRecorder` keeps each environment's episode open from its FIRST
timestep and hands it back whole at its LAST; the FIRST step's ignored action
is not recorded. A LAST timestep with discount 0 is a termination, with
discount 1 a truncation (a time limit).
"""

import jax
import numpy as np

from podracer.envs.timestep import FIRST, LAST, TimeStep
from podracer.offline.episode_data import Episode


class EpisodeRecorder:
    """The open episode of each of `num_envs` environments; `step` returns those that ended."""

    def __init__(self, num_envs: int):
        self._open: list[dict | None] = [None] * num_envs

    def start(self, timestep: TimeStep) -> None:
        """Opens each environment's episode at the batch's first timestep (numpy `[B]`); an environment that is
        not at an episode's FIRST timestep (a resumed run's) is recorded from its next episode on."""
        for env in range(len(self._open)):
            if timestep.step_type[env] == FIRST:
                self._open_at(env, timestep)

    def step(self, action: np.ndarray, timestep: TimeStep) -> list[Episode]:
        """Records `action` `[B, ...]` and the timestep it led to `[B]`; the episodes that ended with it."""
        ended = []
        for env, episode in enumerate(self._open):
            if timestep.step_type[env] == FIRST:  # The step after a LAST: a new episode, the action ignored.
                self._open_at(env, timestep)
                continue
            if episode is None:  # Joined mid-episode: waits for the next.
                continue
            last = timestep.step_type[env] == LAST
            episode["observations"].append(jax.tree.map(lambda x, i=env: x[i], timestep.observation))
            episode["actions"].append(action[env])
            episode["rewards"].append(timestep.reward[env])
            episode["terminations"].append(last and timestep.discount[env] == 0)
            episode["truncations"].append(last and timestep.discount[env] != 0)
            if last:
                ended.append(_whole(episode))
                self._open[env] = None
        return ended

    def _open_at(self, env: int, timestep: TimeStep) -> None:
        first = jax.tree.map(lambda x: x[env], timestep.observation)
        self._open[env] = {"observations": [first], "actions": [], "rewards": [], "terminations": [], "truncations": []}


def _whole(episode: dict) -> Episode:
    return Episode(
        observations=jax.tree.map(lambda *steps: np.stack(steps), *episode["observations"]),
        actions=np.stack(episode["actions"]),
        rewards=np.asarray(episode["rewards"], np.float32),
        terminations=np.asarray(episode["terminations"], bool),
        truncations=np.asarray(episode["truncations"], bool),
    )
