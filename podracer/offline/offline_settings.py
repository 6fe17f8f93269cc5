"""The `offline` fields of a config: training from a dataset instead of from the agent's own experience.

    config.offline.dataset = "datasets/pendulum-medium-v0"   # a Minari dataset's folder ("": online)

With a dataset, an Anakin run trains an offline agent (registered with
`offline=True`: BC, TD3+BC, IQL, ...) from it: `total_steps` counts gradient
steps, each on `agent.batch_size` transitions drawn from the whole dataset,
and `num_envs` and `unroll_length` are not used. The environment (`env.name`)
is the dataset's, for the specs and for periodic evaluation, which is how the
run's returns are measured.

    config.logger.dataset = "datasets/pendulum-replay-v0"     # record this run's experience ("": no)

records an online Anakin run's own training steps as a dataset, D4RL's
"replay" kind (`podracer.offline.experience_log`).
"""

import importlib.util
import os

from ml_collections import ConfigDict

from podracer import agents
from podracer.config import field_checks, population
from podracer.config.errors import ConfigError


def add_defaults(config: ConfigDict) -> None:
    config.offline = ConfigDict({"dataset": ""})  # A dataset's path to train from (podracer.offline); "": online.
    # A dataset to record the run's own training experience into, written at its end (experience_log); "": none.
    config.logger.dataset = ""


def from_dataset(config: ConfigDict) -> bool:
    """Whether the run trains from a dataset."""
    return bool(config.offline.dataset)


def records(config: ConfigDict) -> bool:
    """Whether the run records its experience as a dataset (`logger.dataset`)."""
    return bool(config.logger.dataset)


def validate(config: ConfigDict, agent_from_config: bool) -> None:
    """A dataset only on Anakin and only for an offline agent, and an offline agent only with a dataset; a
    dataset to record only of one online Anakin run, at a path that is free."""
    for field in ("offline.dataset", "logger.dataset"):
        if not isinstance(field_checks.get(config, field), str):
            raise ConfigError(field, f"must be a path, got {field_checks.get(config, field)!r}", "set it to a folder")
    validate_recording(config)
    if not agent_from_config:
        return
    name, offline_agents = config.agent.name, [name for name in agents.names() if agents.lookup(name).offline]
    if from_dataset(config) and config.architecture != "anakin":
        raise ConfigError(
            "offline.dataset",
            f"training from a dataset runs on Anakin, and this config is for {config.architecture}",
            "start from an anakin config (e.g. configs/anakin_pendulum_td3_bc.py), or leave offline.dataset empty",
        )
    if from_dataset(config) and not agents.lookup(name).offline:
        raise ConfigError(
            "agent.name",
            f"agent {name!r} learns online, from its own experience, not from offline.dataset",
            f"choose an offline agent, one of {offline_agents}, or leave offline.dataset empty",
        )
    if agents.lookup(name).offline and not from_dataset(config):
        raise ConfigError(
            "offline.dataset",
            f"agent {name!r} learns from a dataset, and none is given",
            "set --config.offline.dataset=PATH, a dataset podracer collect wrote or any Minari dataset",
        )


def validate_recording(config: ConfigDict) -> None:
    """`logger.dataset` records one online Anakin run of one process into a new folder, with Minari installed."""
    if not records(config):
        return
    path, why = config.logger.dataset, None
    if config.architecture != "anakin" or from_dataset(config):
        why = "records the experience of an online Anakin run", "use an anakin config without offline.dataset"
    elif population.size(config) or config.replicas > 1:
        why = "records one run of one process", "leave population and replicas out, or record each run alone"
    elif os.path.lexists(path):
        why = f"{path} exists already", "choose a new folder (a dataset is never written over)"
    elif not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        why = f"{path}'s folder does not exist", "create it or choose another"
    elif importlib.util.find_spec("minari") is None:
        why = "datasets need Minari", "pip install -e '.[offline]'"
    if why:
        raise ConfigError("logger.dataset", *why)
