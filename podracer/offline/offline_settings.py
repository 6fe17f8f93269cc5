"""The `offline` fields of a config: training from a dataset instead of from the agent's own experience.

    config.offline.dataset = "datasets/pendulum-medium-v0"   # a Minari dataset's folder ("": online)

With a dataset, an Anakin run trains an offline agent (registered with
`offline=True`: BC, TD3+BC, IQL, ...) from it: `total_steps` counts gradient
steps, each on `agent.batch_size` transitions drawn from the whole dataset,
and `num_envs` and `unroll_length` are not used. The environment (`env.name`)
is the dataset's, for the specs and for periodic evaluation, which is how the
run's returns are measured.

    config.logger.dataset = "datasets/pendulum-replay-v0"     # record this run's experience ("": no)

records an online run's own training steps as a dataset, on either
architecture, D4RL's "replay" kind (`podracer.offline.experience_log`).

    config.offline.start_from = "runs/pendulum_iql"            # go on online from an offline run ("": no)

fine-tunes an offline run's agent online, on either architecture, with an
agent that learns both ways (IQL, ReBRAC), its replay buffer first holding
the offline run's dataset unless `offline.keep_data` is False
(`podracer.offline.starting_state`).
"""

import importlib.util
import os

from ml_collections import ConfigDict

from podracer import agents
from podracer.agents.algorithms import shared_fields
from podracer.config import field_checks, population
from podracer.config.errors import ConfigError


def add_defaults(config: ConfigDict) -> None:
    config.offline = ConfigDict(
        {
            "dataset": "",  # A dataset's path to train from (podracer.offline); "": online.
            "start_from": "",  # An offline run's workdir to go on from online (offline.starting_state); "": afresh.
            "keep_data": True,  # Starting from one, begin with its dataset in the replay buffer (IQL's recipe).
        }
    )
    # A dataset to record the run's own training experience into, written at its end (experience_log); "": none.
    config.logger.dataset = ""


def from_dataset(config: ConfigDict) -> bool:
    """Whether the run trains from a dataset."""
    return shared_fields.learns_from_dataset(config)


def records(config: ConfigDict) -> bool:
    """Whether the run records its experience as a dataset (`logger.dataset`)."""
    return bool(config.logger.dataset)


def validate(config: ConfigDict, agent_from_config: bool) -> None:
    """A dataset only on Anakin and only for an offline agent, and an offline agent only with a dataset; a
    dataset to record only of one online run, at a path that is free."""
    for field in ("offline.dataset", "offline.start_from", "logger.dataset"):
        if not isinstance(field_checks.get(config, field), str):
            raise ConfigError(field, f"must be a path, got {field_checks.get(config, field)!r}", "set it to a folder")
    field_checks.boolean(config, "offline.keep_data")
    validate_recording(config)
    validate_start(config)
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
    if config.offline.start_from and not agents.lookup(name).online:
        raise ConfigError(
            "agent.name",
            f"agent {name!r} learns only from a dataset, so it cannot go on online from offline.start_from",
            f"choose one that learns both ways, one of {[n for n in offline_agents if agents.lookup(n).online]}",
        )
    if agents.lookup(name).offline and not agents.lookup(name).online and not from_dataset(config):
        raise ConfigError(
            "offline.dataset",
            f"agent {name!r} learns from a dataset, and none is given",
            "set --config.offline.dataset=PATH, a dataset podracer collect wrote or any Minari dataset",
        )


def validate_start(config: ConfigDict) -> None:
    """`offline.start_from` is for one run learning online; what it names is checked when it is read
    (`podracer.experiment.start_from`), as a dataset is."""
    path, why = config.offline.start_from, None
    if not path:
        return
    if from_dataset(config):
        why = "a run goes on online from an offline run, not from a dataset as well", "leave offline.dataset empty"
    elif population.size(config) or config.replicas > 1:
        why = "starts one run of one process", "leave population and replicas out, or start each member's run alone"
    if why:
        raise ConfigError("offline.start_from", *why)


def validate_recording(config: ConfigDict) -> None:
    """`logger.dataset` records one online run of one process into a new folder, with Minari installed."""
    if not records(config):
        return
    path, why = config.logger.dataset, None
    if from_dataset(config):
        why = "records the experience of an online run", "leave offline.dataset empty"
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
