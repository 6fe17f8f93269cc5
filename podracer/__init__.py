"""podracer: DeepMind's Podracer architectures (Anakin and Sebulba) for scalable reinforcement learning in JAX.

    import podracer

    config = podracer.load_config("configs/anakin_catch.py")      # or podracer.defaults("ppo")
    result = podracer.train(config, env=my_env, agent=my_agent)   # objects passed in win over config names

An agent is a `podracer.Agent` (`init`, `act`, `learn`, `acting_params`);
environments are `podracer.envs.Environment` (pure JAX, for Anakin) or host
batches (`podracer.envs.HostEnvironment`, for Sebulba). Both registries take
your own: `podracer.agents.register`, `podracer.envs.register`.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from podracer import agents, anakin, envs, plot, sebulba
    from podracer.agents import Agent, Trajectory
    from podracer.config.errors import ConfigError
    from podracer.devices import collectives
    from podracer.experiment.schema import defaults, load_config
    from podracer.experiment.schema import validate as validate_config
    from podracer.experiment.train import train
    from podracer.run.contract import Callback, LogEvent, TrainResult, recent_return
    from podracer.run.progress import ProgressBar

# Imported when first used, so that `import podracer.cli` starts without JAX (see `podracer.devices.host_memory`).
_EXPORTS = {
    "agents": ("podracer.agents", None),
    "anakin": ("podracer.anakin", None),
    "sebulba": ("podracer.sebulba", None),
    "plot": ("podracer.plot", None),
    "collectives": ("podracer.devices.collectives", None),
    "envs": ("podracer.envs", None),
    "Agent": ("podracer.agents", "Agent"),
    "Trajectory": ("podracer.agents", "Trajectory"),
    "defaults": ("podracer.experiment.schema", "defaults"),
    "load_config": ("podracer.experiment.schema", "load_config"),
    "validate_config": ("podracer.experiment.schema", "validate"),
    "ConfigError": ("podracer.config.errors", "ConfigError"),
    "ProgressBar": ("podracer.run.progress", "ProgressBar"),
    "Callback": ("podracer.run.contract", "Callback"),
    "LogEvent": ("podracer.run.contract", "LogEvent"),
    "TrainResult": ("podracer.run.contract", "TrainResult"),
    "recent_return": ("podracer.run.contract", "recent_return"),
    "train": ("podracer.experiment.train", "train"),
}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'podracer' has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = importlib.import_module(module)
    return value if attribute is None else getattr(value, attribute)


__version__ = "0.2.0"

__all__ = [
    "Agent",
    "Callback",
    "ConfigError",
    "LogEvent",
    "ProgressBar",
    "TrainResult",
    "Trajectory",
    "__version__",
    "agents",
    "anakin",
    "collectives",
    "defaults",
    "envs",
    "load_config",
    "plot",
    "recent_return",
    "sebulba",
    "train",
    "validate_config",
]
