"""Agents by name: `config.agent.name` looks the agent up here.

Each agent module registers itself with its default hyperparameters (the
fields of `config.agent`), its static checks of those fields and its builder,
so adding an agent touches no other file: every module of `podracer.agents`
is imported with the package, and your own module registers when it is
imported (a config file can import it).
"""

import dataclasses
from collections.abc import Callable

from ml_collections import ConfigDict

from podracer.agents.agent import Agent


@dataclasses.dataclass(frozen=True)
class AgentEntry:
    """What `register` records for one agent name."""

    name: str
    defaults: Callable[[], ConfigDict]  # The fields of config.agent (without `name`), at sensible values.
    build: Callable[[ConfigDict, int], Agent]  # (whole config, number of `learn` calls in the run) -> Agent.
    validate: Callable[[ConfigDict], None] | None = None  # Raises ConfigError for impossible config.agent values.


_AGENTS: dict[str, AgentEntry] = {}


def register(
    name: str,
    *,
    defaults: Callable[[], ConfigDict],
    build: Callable[[ConfigDict, int], Agent],
    validate: Callable[[ConfigDict], None] | None = None,
) -> None:
    """Makes `config.agent.name = name` build agents with `build(config, num_updates)`.

    `num_updates` is how many times the run will call `learn`, for schedules
    such as a learning rate annealed to zero. Registering a name again
    replaces it (a notebook cell may run twice).
    """
    _AGENTS[name] = AgentEntry(name, defaults, build, validate)


def names() -> list[str]:
    """The registered agent names."""
    return sorted(_AGENTS)


def lookup(name: str) -> AgentEntry:
    if name not in _AGENTS:
        raise ValueError(f"Unknown agent {name!r}; choose one of {names()}.")
    return _AGENTS[name]


def make(config: ConfigDict, num_updates: int) -> Agent:
    """The agent `config.agent.name` names, built from `config` for a run of `num_updates` learn calls."""
    return lookup(config.agent.name).build(config, num_updates)
