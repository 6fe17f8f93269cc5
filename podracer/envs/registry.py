"""Environments by name: `make("catch", rows=10)`."""

from typing import Callable

from podracer.envs.base import Environment
from podracer.envs.cartpole import CartPole
from podracer.envs.catch import Catch, NestedCatch
from podracer.envs.gridworld import FourRooms

_REGISTRY: dict[str, Callable[..., Environment]] = {
    "cartpole": CartPole,
    "catch": Catch,
    "four_rooms": FourRooms,
    "nested_catch": NestedCatch,
}


def names() -> list[str]:
    """The names `make` accepts."""
    return sorted(_REGISTRY)


def make(name: str, **kwargs) -> Environment:
    """Builds the pure-JAX environment registered under `name` with its keyword arguments."""
    if name not in _REGISTRY:
        raise ValueError(f"Unknown environment {name!r}; choose one of {names()}.")
    return _REGISTRY[name](**kwargs)
