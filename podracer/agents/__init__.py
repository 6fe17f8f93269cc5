"""Agents written once for both architectures, and the registry that names them.

An agent is an `Agent`: `init`, `act`, `learn` and `acting_params`, pure
functions that Anakin's program and Sebulba's threads call alike (see
`podracer.agents.agent`). The built-in ones register themselves by name;
`register` adds your own. The package is a folder per role: the agents
(`algorithms`), their networks (`models`), the learning pieces (`learning`:
returns, losses, the optimiser, replay), several agents (`several_agents`),
meta-learning (`meta`) and search over continuous actions
(`continuous_search`: Sampled MuZero).

Every module of this package and its folders is imported with it, so an
agent module registers itself just by being here. Imports `config`, `devices`
and `envs`, never the architectures that call it.
"""

import importlib
import pkgutil

from podracer.agents.agent import Agent
from podracer.agents.learning.optimizer import LearnerState
from podracer.agents.registry import AgentEntry, lookup, make, names, register
from podracer.agents.trajectory import Trajectory, Transitions, transitions

for _module in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):
    importlib.import_module(_module.name)

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
