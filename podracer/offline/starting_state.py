"""An online run that starts where an offline run ended: its learned state, and its dataset in the replay buffer.

    config.offline.start_from = "runs/pendulum_iql"   # an offline run's workdir ("": start afresh)

Offline-to-online fine-tuning (Kostrikov et al. 2022, Section 5.3; Tarasov
et al. 2023, Section 6) keeps learning, online, with the agent an offline
run trained: the same losses, now on the agent's own experience. So the run
takes every part of the offline run's learner state (networks, targets,
optimiser states, counters) except what its replay loop owns
(`replay.LOOP_FIELDS`: the buffer, which a run from a dataset has none of,
and its count of `learn` calls), and, unless `offline.keep_data` is False,
its buffer first holds the offline run's dataset, so that early batches mix
the data the agent was trained on with its new experience instead of
forgetting it. The checkpoint is read by `podracer.experiment.start_from`,
which checks it against the config before anything compiles; `begin` puts
it into the run's first state, on either architecture.
"""

import dataclasses
import sys
from typing import Any

import jax
import numpy as np
from ml_collections import ConfigDict

from podracer.agents import Agent
from podracer.agents.learning import replay
from podracer.agents.trajectory import Trajectory
from podracer.config.errors import ConfigError
from podracer.devices import per_device
from podracer.devices.device_split import environments_per_learner_device
from podracer.devices.distributed import is_chief
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep
from podracer.offline.dataset import Dataset


@dataclasses.dataclass(frozen=True)
class Start:
    """What an online run starts from: an offline run's learner state (host arrays, in its agent's structure)
    and the dataset it learned from (None: an empty buffer)."""

    learner: Any
    dataset: Dataset | None
    source: str  # The checkpoint's folder, for the run's first line.


def as_streams(dataset: Dataset, streams: int) -> Trajectory:
    """The dataset's rows dealt into `streams` unbroken runs of timesteps, `[L + 1, streams]` (`[L, streams]`
    actions, L = rows // streams; the rows left over are not used), as a replay buffer's rows hold an
    environment's experience: each row a timestep (FIRST where an episode starts, LAST where it ends, its reward
    and discount those of the step into it) and the action taken there. Each run's last timestep is made LAST, so
    that nothing learns a transition from it into the run's next, online, timestep; the extra timestep at the end,
    which a buffer never stores, repeats it."""
    last = np.ones(dataset.rows, bool)
    last[dataset.transition_rows] = False
    first = np.concatenate([[True], last[:-1]])
    after = np.concatenate([[0.0], dataset.reward[:-1]]).astype(np.float32)
    terminated = np.concatenate([[False], dataset.terminated[:-1]])
    step_type = np.where(first, FIRST, np.where(last, LAST, MID)).astype(np.int32)
    timestep = TimeStep(
        step_type=step_type,
        reward=np.where(first, 0.0, after).astype(np.float32),
        discount=np.where(last & terminated, 0.0, 1.0).astype(np.float32),
        observation=dataset.observation,
    )
    length = dataset.rows // streams

    def dealt(x: np.ndarray) -> np.ndarray:  # [R, ...] -> [L + 1, streams, ...], the last timestep repeated.
        runs = np.swapaxes(x[: length * streams].reshape((streams, length) + x.shape[1:]), 0, 1)
        return np.concatenate([runs, runs[-1:]])

    timestep = jax.tree.map(dealt, timestep)
    timestep.step_type[-2:] = LAST
    return Trajectory(timestep=timestep, action=dealt(dataset.action)[:-1], extras={})


def take_learned(learner: Any, learned: Any) -> Any:
    """`learner` (a dataclass state) with every field of `learned` but those its replay loop owns."""
    names = [field.name for field in dataclasses.fields(learner) if field.name not in replay.LOOP_FIELDS]
    return learner.replace(**{name: getattr(learned, name) for name in names})


def begin(start: Start, learner: Any, agent: Agent, config: ConfigDict) -> Any:
    """The run's first learner state (leaves `[D, ...]` under a `PerDevice`, laid out on its devices): `learner`
    with what `start` learned and, on every device, its dataset remembered in as many rows as the device has
    environments; says so in one line."""
    shardings = jax.tree.map(lambda x: x.sharding, learner)
    devices = len(jax.tree.leaves(shardings)[0].device_set)
    one = take_learned(per_device.first(learner), start.learner)
    note = f"podracer: going on from {start.source}"
    if start.dataset is not None:
        if agent.remember is None:
            raise ConfigError("offline.keep_data", "this agent keeps no replay buffer", "set it to False")
        one = jax.jit(agent.remember)(one, as_streams(start.dataset, environments_per_learner_device(config)))
        note += f", its dataset's {start.dataset.transitions:,} transitions in the replay buffer"
    if is_chief():
        print(note, file=sys.stderr)
    return jax.device_put(per_device.with_device_axis(one, devices), shardings)
