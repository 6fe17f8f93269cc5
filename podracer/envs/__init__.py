"""Environments: pure-JAX ones for Anakin, host batches for Sebulba, the registry that names both, wrappers.

A pure-JAX `Environment` has functional `reset` and `step` with dm_env's
timestep fields; a `HostEnvironment` steps a batch on the host (envpool,
Gymnasium, PettingZoo: `podracer.envs.host_suites`). `SUITE:TASK` names reach
existing suites through adapters (`podracer.envs.suites` for the pure-JAX
ones), imported only when named. Imports only `podracer.config` and `podracer.devices`.
"""

from podracer.envs import episodes
from podracer.envs.base import Environment
from podracer.envs.cartpole import CartPole
from podracer.envs.catch import Catch, NestedCatch
from podracer.envs.dm_env_adapter import DmEnvAdapter
from podracer.envs.env_registry import SUITES, check, host_factory, make, names, register
from podracer.envs.gridworld import FourRooms
from podracer.envs.host import CompiledStep, HostEnvFactory, HostEnvironment
from podracer.envs.host_suites.envpool_env import EnvpoolEnvironment, make_envpool_env
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep, from_flags, restart, transition
from podracer.envs.wrappers import AutoReset, EpisodeStatistics, wrap_for_training

__all__ = [
    "FIRST",
    "LAST",
    "MID",
    "AutoReset",
    "CartPole",
    "Catch",
    "CompiledStep",
    "DmEnvAdapter",
    "Environment",
    "EnvpoolEnvironment",
    "EpisodeStatistics",
    "SUITES",
    "FourRooms",
    "HostEnvFactory",
    "HostEnvironment",
    "NestedCatch",
    "TimeStep",
    "episodes",
    "from_flags",
    "host_factory",
    "check",
    "make",
    "make_envpool_env",
    "names",
    "register",
    "restart",
    "transition",
    "wrap_for_training",
]
