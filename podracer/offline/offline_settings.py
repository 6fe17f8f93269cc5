"""The `offline` fields of a config: training from a dataset instead of from the agent's own experience.

    config.offline.dataset = "datasets/pendulum-medium-v0"   # a Minari dataset's folder ("": online)

With a dataset, an Anakin run trains an offline agent (registered with
`offline=True`: BC, TD3+BC, IQL, ...) from it: `total_steps` counts gradient
steps, each on `agent.batch_size` transitions drawn from the whole dataset,
and `num_envs` and `unroll_length` are not used. The environment (`env.name`)
is the dataset's, for the specs and for periodic evaluation, which is how the
run's returns are measured.
"""

from ml_collections import ConfigDict

from podracer import agents
from podracer.config import field_checks
from podracer.config.errors import ConfigError


def add_defaults(config: ConfigDict) -> None:
    config.offline = ConfigDict({"dataset": ""})  # A dataset's path to train from (podracer.offline); "": online.


def from_dataset(config: ConfigDict) -> bool:
    """Whether the run trains from a dataset."""
    return bool(config.offline.dataset)


def validate(config: ConfigDict, agent_from_config: bool) -> None:
    """A dataset only on Anakin and only for an offline agent, and an offline agent only with a dataset."""
    if not isinstance(field_checks.get(config, "offline.dataset"), str):
        raise ConfigError("offline.dataset", f"must be a path, got {config.offline.dataset!r}", "set it to a folder")
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
