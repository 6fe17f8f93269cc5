"""Pure-JAX environments with a functional dm_env-style API, and `make` to build them by name."""

from podracer.envs.base import Environment
from podracer.envs.cartpole import CartPole
from podracer.envs.catch import Catch, NestedCatch
from podracer.envs.dm_env_adapter import DmEnvAdapter
from podracer.envs.envpool_env import HostEnvironment, make_host_env
from podracer.envs.gridworld import FourRooms
from podracer.envs.registry import make, names
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep
from podracer.envs.wrappers import AutoReset, EpisodeStatistics, wrap_for_training

__all__ = [
    "FIRST", "LAST", "MID", "AutoReset", "CartPole", "Catch", "DmEnvAdapter", "Environment", "EpisodeStatistics",
    "FourRooms",
    "HostEnvironment", "NestedCatch", "TimeStep", "make", "make_host_env", "names", "wrap_for_training",
]
