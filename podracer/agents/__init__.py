"""Agents written once for both architectures, and the registry that names them.

An agent is an `Agent`: `init`, `act`, `learn` and `acting_params`, pure
functions that Anakin's program and Sebulba's threads call alike (see
`podracer.agents.agent`). The built-in ones (actor-critic, PPO, IMPALA)
register themselves by name; `register` adds your own.

Every module of this package is imported with it, so an agent module
registers itself just by being here. Imports `config`, `runtime` and `envs`,
never the architectures that call it.
"""

import importlib
import pkgutil

from podracer.agents.agent import Agent
from podracer.agents.optimizer import LearnerState
from podracer.agents.registry import AgentEntry, lookup, make, names, register
from podracer.agents.trajectory import Trajectory, Transitions, transitions

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "Agent",
    "AgentEntry",
    "LearnerState",
    "Trajectory",
    "Transitions",
    "lookup",
    "make",
    "names",
    "register",
    "transitions",
]
