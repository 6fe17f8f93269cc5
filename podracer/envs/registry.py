"""Environments by name, for config files and the command line: the built-ins, envpool's tasks and your own.

Two kinds of names:

- pure-JAX environments for Anakin: `make("catch", rows=10)` calls the factory
  registered under the name with the config's `env.kwargs`;
- host environments for Sebulba: `host_factory("Pong-v5")` returns
  `make(num_envs, seed, **kwargs)`, which builds one batch per actor thread. A
  name registered with `host=True` wins; any other name is looked up among
  envpool's task ids.

`register` adds a name of either kind, so an environment written in a notebook
or in your own module can be named in a config file (`config.env.name`) once
the module that registers it is imported (a config file can import it).
"""

import functools
from collections.abc import Callable
from typing import Any

from podracer.envs import envpool_env
from podracer.envs.base import Environment
from podracer.envs.cartpole import CartPole
from podracer.envs.catch import Catch, NestedCatch
from podracer.envs.gridworld import FourRooms
from podracer.envs.host import HostEnvironment

_JAX: dict[str, Callable[..., Environment]] = {
    "cartpole": CartPole,
    "catch": Catch,
    "four_rooms": FourRooms,
    "nested_catch": NestedCatch,
}
_HOST: dict[str, Callable[..., HostEnvironment]] = {}


def register(name: str, factory: Callable[..., Any], *, host: bool = False) -> None:
    """Makes `config.env.name = name` build environments with `factory`.

    Pure-JAX (the default): `factory(**env.kwargs)` returns an `Environment`.
    With `host=True`: `factory(num_envs, seed, **env.kwargs)` returns a
    `HostEnvironment` batch for Sebulba. Registering a name again replaces it
    (a notebook cell may run twice).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"An environment name must be a non-empty string, got {name!r}.")
    if not callable(factory):
        raise TypeError(f"The factory registered as {name!r} must be callable, got {factory!r}.")
    (_HOST if host else _JAX)[name] = factory


def names() -> list[str]:
    """The pure-JAX environment names `make` accepts."""
    return sorted(_JAX)


def make(name: str, **kwargs: Any) -> Environment:
    """Builds the pure-JAX environment registered under `name` with its keyword arguments."""
    if name not in _JAX:
        raise ValueError(f"Unknown environment {name!r}; choose one of {names()}.")
    return _JAX[name](**kwargs)


def is_host_env(name: str) -> bool:
    """Whether `name` is a registered host environment or an envpool task id."""
    return name in _HOST or envpool_env.is_envpool_task(name)


def host_factory(name: str) -> Callable[..., HostEnvironment]:
    """`make(num_envs, seed, **kwargs)` for the host environment `name`."""
    return _HOST.get(name) or functools.partial(envpool_env.make_envpool_env, name)
