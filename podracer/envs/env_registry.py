"""Environments by name, for config files and the command line: the built-ins, the suites you already use, your own.

Three kinds of names:

- pure-JAX environments for Anakin: `make("catch", rows=10)` calls the factory
  registered under the name with the config's `env.kwargs`;
- host environments for Sebulba: `host_factory("Pong-v5")` returns
  `make(num_envs, seed, **kwargs)`, which builds one batch per actor thread. A
  name registered with `host=True` wins; any other bare name is looked up among
  envpool's task ids;
- `SUITE:TASK` names an environment of an existing suite through its adapter:
  `gymnax:Breakout-MinAtar` and `brax:inverted_pendulum` for Anakin,
  `gymnasium:CartPole-v1` (any Gymnasium id, your own included) and
  `pettingzoo:mpe2.simple_spread_v3` (any module with a PettingZoo
  `parallel_env`: several agents) for Sebulba.
  A suite is an optional extra, imported only when a name uses it.

`register` adds a name of either kind, so an environment written in a notebook
or in your own module can be named in a config file (`config.env.name`) once
the module that registers it is imported (a config file can import it).
`check(name, host=...)` is the static validation of `config.env.name`.
`reset_fraction(name)` is the default of `config.env.reset_fraction`: the share of a batch that
auto-reset resets alone, small where an environment's reset is expensive (it generates a world).
"""

import dataclasses
import difflib
import functools
import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ml_collections import ConfigDict

from podracer.config.errors import ConfigError
from podracer.envs import multi_agent
from podracer.envs.base import Environment
from podracer.envs.cartpole import CartPole
from podracer.envs.catch import Catch, NestedCatch
from podracer.envs.gridworld import FourRooms
from podracer.envs.host import HostEnvironment
from podracer.envs.host_suites import envpool_env, envpool_tasks
from podracer.envs.lpg import DelayedChain, RandomGridWorld, TabularGridWorld
from podracer.envs.observed_state import ObservesState


@dataclasses.dataclass(frozen=True)
class Suite:
    """An environment suite behind a `SUITE:` prefix.

    `adapter` is the podracer module that wraps it (`podracer.envs.suites`); it
    defines `is_task(task)`, `task_names()` (for hints) and `make(task, **kwargs)`
    (pure JAX) or `make(task, num_envs, seed, **kwargs)` (host). Importing it
    imports the suite, so a missing extra shows as a `ModuleNotFoundError` naming
    one of `modules`, the top-level packages the adapter imports; `extra` is the
    pip extra that installs them. `expensive_reset`: its reset costs many steps (it generates a world or a
    maze), so auto-reset resets a few environments alone (`reset_fraction`).
    """

    adapter: str
    modules: tuple[str, ...]
    extra: str
    host: bool
    expensive_reset: bool = False


def _suite(module: str, *modules: str, extra: str = "", expensive_reset: bool = False) -> Suite:
    return Suite(f"podracer.envs.suites.{module}", modules, extra or modules[0], False, expensive_reset)


def _host_suite(module: str, *modules: str) -> Suite:
    return Suite(f"podracer.envs.host_suites.{module}", modules, modules[0], host=True)


SUITES = {
    "gymnax": _suite("gymnax_env", "gymnax"),
    "brax": _suite("brax_env", "brax"),
    "gymnasium": _host_suite("gymnasium_env", "gymnasium"),  # With its worker pool.
    "craftax": _suite("craftax_env", "craftax", expensive_reset=True),
    "jumanji": _suite("jumanji_env", "jumanji", "stoa", expensive_reset=True),
    "playground": _suite("playground_env", "mujoco_playground", extra="playground"),
    "xminigrid": _suite("xminigrid_env", "xminigrid", "stoa", expensive_reset=True),
    "navix": _suite("navix_env", "navix", "stoa", expensive_reset=True),
    "popgym_arcade": _suite("popgym_arcade_env", "popgym_arcade"),
    "pgx": _suite("pgx_env", "pgx"),
    "jaxmarl": _suite("jaxmarl_env", "jaxmarl"),  # Several agents in one environment (`podracer.envs.multi_agent`).
    "pettingzoo": _host_suite("pettingzoo_env", "pettingzoo"),  # Several agents.
}

_JAX: dict[str, Callable[..., Environment]] = {
    "cartpole": CartPole,
    "catch": Catch,
    "four_rooms": FourRooms,
    "lpg_delayed_chain": DelayedChain,
    "lpg_random_grid": RandomGridWorld,
    "lpg_tabular": TabularGridWorld,
    "nested_catch": NestedCatch,
}
BUILT_IN = tuple(sorted(_JAX))
"""The pure-JAX environments podracer ships: `names()` before any `register`."""
_EXPENSIVE_RESETS = ("lpg_random_grid", "lpg_tabular")  # Built-ins whose episode starts place cells on a grid.

EXPENSIVE_RESET_FRACTION = 1 / 16
"""`reset_fraction` where a reset is expensive: a step resets up to 1/16 of the batch alone (64 of Craftax's 1,024)."""

_HOST: dict[str, Callable[..., HostEnvironment]] = {}


def register(name: str, factory: Callable[..., Any], *, host: bool = False) -> None:
    """Makes `config.env.name = name` build environments with `factory`.

    Pure-JAX (the default): `factory(**env.kwargs)` returns an `Environment`.
    With `host=True`: `factory(num_envs, seed, **env.kwargs)` returns a
    `HostEnvironment` batch for Sebulba. Registering a name again replaces it
    (a notebook cell may run twice). Names may not contain ':', which marks a suite.
    """
    if not isinstance(name, str) or not name or ":" in name:
        raise ValueError(f"An environment name must be a non-empty string without ':', got {name!r}.")
    if not callable(factory):
        raise TypeError(f"The factory registered as {name!r} must be callable, got {factory!r}.")
    (_HOST if host else _JAX)[name] = factory


def names() -> list[str]:
    """The registered pure-JAX environment names (suite tasks are named `SUITE:TASK` besides these)."""
    return sorted(_JAX)


def check(name: Any, *, host: bool, import_suite: bool = True) -> None:
    """Raises `ConfigError` on `env.name` unless `name` builds an environment of the kind asked for.

    Imports the suite a `SUITE:TASK` name uses (which must be installed) to
    look the task up; builds nothing. With `import_suite=False` (static
    validation) a suite's task is not looked up, only its prefix, architecture
    and installation: importing gymnax starts JAX's backends, which must wait
    until the job has started (`podracer.devices.distributed.start`); `make` and
    `host_factory` look the task up.
    """
    architecture = "sebulba" if host else "anakin"
    if not isinstance(name, str) or not name:
        raise ConfigError("env.name", f"must be a non-empty string, got {name!r}", "name an environment")
    prefix, task = split_suite(name)
    if prefix:
        suite = _known_suite(prefix)
        if suite.host != host:
            runs_on = "sebulba" if suite.host else "anakin"
            raise ConfigError(
                "env.name",
                f"{prefix} environments run under {runs_on}, not {architecture}",
                f"set --config.architecture={runs_on}, or choose an environment for {architecture}",
            )
        if not import_suite:
            if any(importlib.util.find_spec(module) is None for module in suite.modules):
                raise _missing_suite(prefix, suite)
            return
        adapter = _adapter(prefix)
        if not adapter.is_task(task):
            hint = _close_matches(task, adapter.task_names(), prefix)
            raise ConfigError("env.name", f"{prefix} has no environment {task!r}", hint)
    elif host and not (name in _HOST or envpool_tasks.is_envpool_task(name)):
        raise ConfigError(
            "env.name",
            f"{name!r} is not a registered host environment or an envpool task",
            "use an envpool id such as CartPole-v1, Pong-v5 or HalfCheetah-v4 (envpool.list_all_envs()), "
            "a Gymnasium id as gymnasium:ID, or register your own with podracer.envs.register(name, factory, host=True)",
        )
    elif not host and name not in _JAX:
        raise ConfigError(
            "env.name",
            f"unknown environment {name!r}",
            f"choose one of {names()}, a suite's task such as gymnax:Breakout-MinAtar or brax:inverted_pendulum, "
            "or register your own with podracer.envs.register(name, factory)",
        )


def reset_fraction(name: str) -> float:
    """The share of a batch a step of auto-reset resets alone for the environment `name` (`AutoReset`), the default
    of `env.reset_fraction`: `EXPENSIVE_RESET_FRACTION` where its reset is expensive, else 1 (the whole batch)."""
    prefix, _ = split_suite(name)
    expensive = SUITES[prefix].expensive_reset if prefix in SUITES else name in _EXPENSIVE_RESETS
    return EXPENSIVE_RESET_FRACTION if expensive else 1.0


def make(name: str, observe_state: bool = False, **kwargs: Any) -> Environment:
    """Builds the pure-JAX environment `name` (registered, or `SUITE:TASK`) with its keyword arguments; with
    `observe_state`, wrapped so that its observation carries its state (`observed_state.ObservesState`)."""
    check(name, host=False)
    if not isinstance(observe_state, bool):
        raise ValueError(f"observe_state must be True or False, got {observe_state!r}.")
    prefix, task = split_suite(name)
    env = _adapter(prefix).make(task, **kwargs) if prefix else _JAX[name](**kwargs)
    return ObservesState(env) if observe_state else env


def host_factory(name: str) -> Callable[..., HostEnvironment]:
    """`make(num_envs, seed, **kwargs)` for the host environment `name` (registered, envpool, or `SUITE:TASK`)."""
    check(name, host=True)
    prefix, task = split_suite(name)
    if prefix:
        return functools.partial(_adapter(prefix).make, task)
    return _HOST.get(name) or functools.partial(envpool_env.make_envpool_env, name)


def with_config_kwargs(config: ConfigDict, factory: Callable, *args: Any) -> Any:
    """`factory(*args, **config.env.kwargs)`, with the environment's refusal of its options as a `ConfigError`.

    Both architectures build the config's environment this way: Anakin's with
    `make`, Sebulba's batches with `host_factory`'s factory.
    """
    try:
        return factory(*args, **config.env.kwargs)
    except ConfigError:  # The registry's, on env.name.
        raise
    except (TypeError, ValueError) as error:
        raise ConfigError(
            "env.kwargs",
            f"{config.env.name} rejects {dict(config.env.kwargs)} ({error})",
            "pass only the environment's own options, at values it accepts",
        ) from None


def agent_layout(config: ConfigDict) -> int | dict[str, int]:
    """How many agents act in the config's environment, or each team's size where it has teams
    (`multi_agent.agent_layout`), read from one built for the config's architecture: a pure-JAX one for
    Anakin, a host batch of one for Sebulba."""
    if config.architecture == "sebulba":
        with with_config_kwargs(config, host_factory(config.env.name), 1, config.seed) as env:
            return multi_agent.agent_layout(env)
    return multi_agent.agent_layout(with_config_kwargs(config, make, config.env.name))


def split_suite(name: str) -> tuple[str, str]:
    """`("gymnax", "Pong-misc")` for `"gymnax:Pong-misc"`, `("", name)` for a name with no suite prefix.

    Only the first ':' separates, so a Gymnasium id may itself be `module:Id`.
    """
    prefix, separator, task = name.partition(":")
    return (prefix, task) if separator else ("", name)


def _known_suite(prefix: str) -> Suite:
    if prefix not in SUITES:
        raise ConfigError(
            "env.name",
            f"unknown suite {prefix!r}",
            f"prefix a task with one of {sorted(SUITES)}, e.g. gymnax:CartPole-v1",
        )
    return SUITES[prefix]


def _adapter(prefix: str) -> ModuleType:
    """The adapter module of a suite, imported now; `ConfigError` with the pip command if the suite is missing."""
    suite = _known_suite(prefix)
    try:
        return importlib.import_module(suite.adapter)
    except ModuleNotFoundError as error:
        if error.name is None or error.name.split(".")[0] not in suite.modules:
            raise
        raise _missing_suite(prefix, suite) from None


def _missing_suite(prefix: str, suite: Suite) -> ConfigError:
    return ConfigError(
        "env.name",
        f"{prefix} environments need the {suite.extra} extra, which is not installed",
        f"pip install -e '.[{suite.extra}]' (or pip install 'podracer[{suite.extra}]')",
    )


def _close_matches(task: str, tasks: list[str], prefix: str) -> str:
    close = difflib.get_close_matches(task, tasks, n=5)
    hint = f"did you mean {', '.join(f'{prefix}:{t}' for t in close)}? " if close else ""
    shown = tasks if len(tasks) <= 30 else [*tasks[:30], "..."]
    return f"{hint}{prefix} has {shown}"
