"""The dataset logger: every environment step a run trains on, recorded as a dataset (`config.logger.dataset`).

D4RL's "replay" datasets are the experience an agent gathered while it
learned, its early, poor episodes and its later, better ones together. With
`logger.dataset = PATH`, an Anakin run hands each dispatch's steps (every
environment's action and the timestep it led to, which the compiled program
returns beside its metrics) to an `ExperienceLog`, and each Sebulba actor
thread its rollouts to one of its own. A log cuts them into whole episodes
(`podracer.offline.recorder`) and, when the run has made all its updates,
the run writes them as the Minari dataset PATH (`minari_files`), whole. A run
that is killed or stopped leaves no PATH; a resumed run records from the
episodes that start after it resumed, and its metadata says from which step.
"""

from typing import Any

import jax
import numpy as np
from ml_collections import ConfigDict

from podracer.envs.timestep import TimeStep
from podracer.offline import minari_files
from podracer.offline.episode_data import Episode
from podracer.offline.recorder import EpisodeRecorder


class ExperienceLog:
    """The episodes of one batch of training environments (Anakin's, or one Sebulba actor thread's)."""

    def __init__(self, path: str, specs: tuple, metadata: dict):
        self.path, self.specs, self.metadata = path, specs, metadata
        self.episodes: list[Episode] = []
        self._recorder: EpisodeRecorder | None = None

    def start(self, first: TimeStep) -> None:
        """Opens the episodes of the environments at their timestep `first` (leaves `[B, ...]`)."""
        self._recorder = EpisodeRecorder(len(np.asarray(first.step_type)))
        self._recorder.start(jax.tree.map(np.asarray, first))

    def add(self, experience: dict) -> None:
        """Records a dispatch's steps: `{"timestep": TimeStep, "action": ...}`, leaves `[updates, T, B, ...]`."""
        timestep = jax.tree.map(np.asarray, experience["timestep"])
        action = np.asarray(experience["action"])
        for update in range(action.shape[0]):
            for t in range(action.shape[1]):
                step = jax.tree.map(lambda x, u=update, i=t: x[u, i], timestep)
                self.episodes += self._recorder.step(action[update, t], step)

    def add_unroll(self, trajectory: Any) -> None:
        """Records a Sebulba actor thread's rollout (a `Trajectory`); its first opens the episodes."""
        if self._recorder is None:
            self.start(jax.device_get(jax.tree.map(lambda x: x[0], trajectory.timestep)))
        self.add(jax.tree.map(lambda x: x[None], jax.device_get(experience(trajectory))))

    def write(self, *others: "ExperienceLog") -> None:
        """Writes the episodes that ended (this log's, then `others'`) as the dataset `path`, whole, with what made
        them in its metadata."""
        episodes = [episode for log in (self, *others) for episode in log.episodes]
        minari_files.write(self.path, episodes, *self.specs, self.metadata)


def metadata(config: ConfigDict, workdir: str | None, from_step: int) -> dict:
    """What a dataset of a run's experience records of its making: the run's config, its workdir, the step it
    began recording at."""
    return {
        **minari_files.run_metadata(config),
        "recorded": "the run's training experience",
        "workdir": workdir,
        "from_step": from_step,
    }


def experience(trajectory: Any) -> dict:
    """What the dataset logger keeps of an unroll's `Trajectory`: its T actions and the T timesteps they led to."""
    return {"timestep": jax.tree.map(lambda x: x[1:], trajectory.timestep), "action": trajectory.action}
