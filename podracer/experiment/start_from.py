"""The offline run an online run goes on from (`offline.start_from`), read and checked before anything compiles.

`load(config)` reads the newest checkpoint of the run's workdir (as `podracer
evaluate` does, onto any number of devices) and, unless `offline.keep_data`
is False, the dataset that run learned from. Everything that can be wrong
is said here, as a `ConfigError` (an exit status of 2 from `podracer
train`): a folder with no checkpoint, another agent, networks of other
shapes, an environment whose observations or actions are not the offline
run's, a dataset that is gone. `podracer.offline.starting_state` then puts it
into the run's first state.
"""

from ml_collections import ConfigDict

from podracer.config.errors import ConfigError
from podracer.experiment import trained
from podracer.offline import training_data
from podracer.offline.dataset import describe
from podracer.offline.starting_state import Start


def load(config: ConfigDict) -> Start | None:
    """What `config.offline.start_from` names, checked against `config`; None where it is empty."""
    path = config.offline.start_from
    if not path:
        return None
    try:
        source = trained.load(path)
    except ConfigError as error:
        raise ConfigError(
            "offline.start_from", f"{path}: {error}", "give the workdir of a run that saved one"
        ) from None
    check_same_agent(config, source.config, path)
    specs, theirs = trained.env_specs(config), source.specs
    if _described(theirs) != _described(specs):
        raise ConfigError(
            "offline.start_from",
            f"{path} learned on {source.config.env.name}, of {_described(theirs)}, and env.name has {_described(specs)}",
            "set env.name to an environment of the same observations and actions",
        )
    dataset = None
    if config.offline.keep_data and source.config.offline.dataset:
        try:
            dataset = training_data.read(source.config, *specs)
        except ConfigError as error:
            raise ConfigError(
                "offline.start_from", f"{path} learned from a dataset that cannot be read: {error}", _NO_DATA
            ) from None
    return Start(learner=source.learner, dataset=dataset, source=source.checkpoint)


_NO_DATA = "put the dataset back, or set --config.offline.keep_data=False to start with an empty buffer"


def check_same_agent(config: ConfigDict, theirs: ConfigDict, path: str) -> None:
    """The offline run trained the agent `config` names, with networks of the same fields."""
    if theirs.agent.name != config.agent.name:
        raise ConfigError(
            "agent.name",
            f"{path} trained {theirs.agent.name!r}, which this run would go on with, not {config.agent.name!r}",
            f"set --config.agent.name={theirs.agent.name}",
        )
    ours, saved = config.network.to_dict(), theirs.network.to_dict()
    differing = sorted(field for field in ours if ours[field] != saved.get(field))
    if differing:
        settings = ", ".join(f"network.{field}={saved.get(field)!r}" for field in differing)
        raise ConfigError("network", f"{path}'s networks were built with {settings}", "set the same fields")


def _described(specs: tuple) -> str:
    observation, action = specs
    return f"observations {describe(observation)} and actions {describe(action)}"
