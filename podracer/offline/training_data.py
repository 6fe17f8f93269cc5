"""The dataset a run trains from, read, checked against the run's environment and placed on its devices.

Everything that can be wrong with it is said here, before anything compiles,
as a `ConfigError` naming `offline.dataset` (and so an exit status of 2 from
`podracer train`): a path that holds no dataset or cannot be read, Minari
not installed, observations or actions that are not the environment's.
"""

from typing import Any

from jax.sharding import Mesh
from ml_collections import ConfigDict

from podracer.config.errors import ConfigError, UsageError
from podracer.offline import dataset as dataset_rows
from podracer.offline import minari_files, sampling
from podracer.offline.dataset import Dataset
from podracer.offline.sampling import DeviceRows


def read(config: ConfigDict, observation_spec: Any, action_spec: Any) -> Dataset:
    """`config.offline.dataset`'s rows, in the environment's dtypes; `ConfigError` naming the field otherwise."""
    path = config.offline.dataset
    try:
        episodes, their_observations, their_actions, metadata = minari_files.read(path)
    except UsageError as error:  # DatasetError, or Minari missing.
        raise ConfigError(
            "offline.dataset", str(error), "give a dataset podracer collect wrote, or any Minari dataset's folder"
        ) from None
    dataset_rows.check_specs(path, (their_observations, their_actions), (observation_spec, action_spec))
    return dataset_rows.from_episodes(episodes, observation_spec, action_spec, metadata)


def check_batch(config: ConfigDict, devices: int) -> None:
    """The batch of each gradient step splits evenly over the devices; `ConfigError` naming `agent.batch_size`."""
    if config.agent.batch_size % devices:
        raise ConfigError(
            "agent.batch_size",
            f"{config.agent.batch_size} transitions do not split evenly over {devices} devices",
            f"set it to a multiple of {devices}, e.g. {devices * max(1, config.agent.batch_size // devices)}",
        )


def load(config: ConfigDict, env: Any, mesh: Mesh) -> tuple[Dataset, DeviceRows]:
    """The dataset `config.offline.dataset` names, checked against `env` and placed on `mesh`."""
    check_batch(config, mesh.size)
    dataset = read(config, env.observation_spec(), env.action_spec())
    return dataset, sampling.place(dataset, mesh)
