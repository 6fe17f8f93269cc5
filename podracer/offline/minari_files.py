"""Datasets on disk, as Minari datasets: written whole, read from any local path.

Minari (Farama's successor to D4RL) is the format the offline-RL ecosystem
reads: TorchRL, d3rlpy, JAX-CORL and Unifloral's loaders, and `minari` itself.
A podracer dataset is a Minari dataset folder, `PATH/data/` holding
`main_data.hdf5` and `metadata.json`, so

    minari.MinariDataset("PATH/data")               # any path
    minari.load_dataset("NAME-v0")                  # a folder NAME-v0 in $MINARI_DATASETS_PATH

read it as it was recorded: observations are stored raw (Minari's JPEG
encoding of images, which is lossy, is off). What made the dataset (the
config, the checkpoint, the policy mix, the mean return of its episodes) is
in its metadata under `podracer`.

A dataset is written into a hidden folder beside `PATH` and renamed to it
once whole, so a killed run leaves `PATH` absent, never half-written. Reading
accepts `PATH` or `PATH/data`, of podracer's datasets or anyone's (a D4RL
task downloaded by `minari download`), and says which path failed and why.
"""

import contextlib
import json
import os
import re
import shutil
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from dm_env import specs

from podracer.config.errors import UsageError
from podracer.envs.spaces import space_to_spec
from podracer.offline.episode_data import Episode, mean_return
from podracer.run.whole_files import partial_path

METADATA_KEY = "podracer"


class DatasetError(UsageError):
    """A dataset that cannot be read or written: its path and why."""


def _minari() -> Any:
    try:
        import minari
    except ImportError:
        raise UsageError("datasets need Minari: pip install -e '.[offline]'") from None
    return minari


def spec_to_space(spec: Any) -> Any:
    """The Gymnasium space of a dm_env spec (or a dict of them): `space_to_spec`'s inverse, up to bounds."""
    from gymnasium import spaces

    if isinstance(spec, dict):
        return spaces.Dict({key: spec_to_space(value) for key, value in spec.items()})
    if isinstance(spec, specs.DiscreteArray):
        return spaces.Discrete(spec.num_values)
    dtype = np.dtype(spec.dtype)
    if isinstance(spec, specs.BoundedArray):
        low, high = (np.broadcast_to(bound, spec.shape).astype(dtype) for bound in (spec.minimum, spec.maximum))
    elif np.issubdtype(dtype, np.integer):
        low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
    else:
        low, high = -np.inf, np.inf
    return spaces.Box(low=low, high=high, shape=spec.shape, dtype=dtype)


@contextlib.contextmanager
def _datasets_root(root: str) -> Iterator[None]:
    """Minari writes new datasets under `$MINARI_DATASETS_PATH`: point it at `root` while one is written."""
    before = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = root
    try:
        yield
    finally:
        if before is None:
            del os.environ["MINARI_DATASETS_PATH"]
        else:
            os.environ["MINARI_DATASETS_PATH"] = before


def run_metadata(config: Any) -> dict:
    """What a dataset records of the run that made it: its agent, environment, architecture and whole config."""
    return {
        "agent": config.agent.name,
        "env": config.env.name,
        "architecture": config.architecture,
        "config": json.loads(config.to_json()),
    }


def write(path: str, episodes: list[Episode], observation_spec: Any, action_spec: Any, metadata: dict) -> None:
    """Writes `episodes` as the Minari dataset `path`, whole, with `metadata` (JSON values) under `podracer`,
    to which it adds the episodes' count, their steps and their mean return."""
    steps = sum(episode.steps for episode in episodes)
    metadata = {**metadata, "episodes": len(episodes), "steps": steps, "mean_return": mean_return(episodes)}
    minari = _minari()
    from minari.data_collector.episode_buffer import EpisodeBuffer

    if os.path.exists(path):
        raise DatasetError(f"{path} exists already; choose another path or remove it")
    partial = partial_path(path)
    shutil.rmtree(partial, ignore_errors=True)  # What a killed write left.
    name = os.path.basename(os.path.normpath(path))
    buffers = [
        EpisodeBuffer(
            id=index,
            observations=episode.observations,
            actions=episode.actions,
            rewards=episode.rewards,
            terminations=episode.terminations,
            truncations=episode.truncations,
            infos={},
        )
        for index, episode in enumerate(episodes)
    ]
    try:
        with _datasets_root(partial), warnings.catch_warnings():
            # Minari's advice on the metadata it wants (an author's e-mail, an environment spec): podracer's is its own.
            warnings.filterwarnings("ignore", category=UserWarning, module="minari")
            dataset = minari.create_dataset_from_buffers(
                dataset_id=name if re.search(r"-v\d+$", name) else f"{name}-v0",  # Minari's ids end in a version.
                buffer=buffers,
                observation_space=spec_to_space(observation_spec),
                action_space=spec_to_space(action_spec),
                algorithm_name=metadata.get("agent"),
                description="Recorded by podracer (see its metadata's podracer entry).",
                jpeg_encoding=False,
            )
        dataset.storage.update_metadata({METADATA_KEY: metadata})
        (written,) = os.listdir(partial)
        os.replace(os.path.join(partial, written), path)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def data_folder(path: str) -> str:
    """The folder Minari's storage is in: `path/data`, or `path` itself where it holds the metadata."""
    return path if os.path.isfile(os.path.join(path, "metadata.json")) else os.path.join(path, "data")


def read(path: str) -> tuple[list[Episode], Any, Any, dict]:
    """`(episodes, observation_spec, action_spec, podracer's metadata)` of the Minari dataset at `path`.

    Raises `DatasetError` naming `path` where it is missing or unreadable.
    """
    minari = _minari()
    folder = data_folder(path)
    if not os.path.isfile(os.path.join(folder, "metadata.json")):
        raise DatasetError(f"{path} is not a dataset: there is no {os.path.join(folder, 'metadata.json')}")
    try:
        dataset = minari.MinariDataset(folder)
        episodes = [_episode(data) for data in dataset.iterate_episodes()]
        observation_spec = space_to_spec(dataset.observation_space, "observation")
        action_spec = space_to_spec(dataset.action_space, "action")
    except (OSError, ValueError, KeyError, TypeError, NotImplementedError) as error:
        raise DatasetError(f"{path} cannot be read as a Minari dataset: {error}") from None
    if not episodes:
        raise DatasetError(f"{path} holds no episodes")
    return episodes, observation_spec, action_spec, dict(dataset.storage.metadata.get(METADATA_KEY, {}))


def _episode(data: Any) -> Episode:
    return Episode(
        observations=data.observations,
        actions=np.asarray(data.actions),
        rewards=np.asarray(data.rewards, np.float32),
        terminations=np.asarray(data.terminations, bool),
        truncations=np.asarray(data.truncations, bool),
    )
