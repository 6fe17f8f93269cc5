"""Agents by name: `config.agent.name` looks the agent up here.

Each agent module registers itself with its default hyperparameters (the
fields of `config.agent`), its static checks of those fields and its builder,
so adding an agent touches no other file: every module of `podracer.agents`
is imported with the package, and your own module registers when it is
imported (a config file can import it).
"""

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from ml_collections import ConfigDict

from podracer.agents.agent import Agent
from podracer.config.errors import ConfigError
from podracer.envs import multi_agent


@dataclasses.dataclass(frozen=True)
class AgentEntry:
    """What `register` records for one agent name."""

    name: str
    defaults: Callable[[], ConfigDict]  # The fields of config.agent (without `name`), at sensible values.
    build: Callable[[ConfigDict, int], Agent]  # (whole config, number of `learn` calls in the run) -> Agent.
    validate: Callable[[ConfigDict], None] | None = None  # Raises ConfigError for impossible config.agent values.
    several_agents: bool = False  # Trains the agents of a multi-agent environment (several_agents.per_agent).
    check_environment: Callable[[ConfigDict, Any], None] | None = None  # ConfigError where the environment won't do.
    config_defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # Other fields, by dotted name.
    offline: bool = False  # Learns from a dataset (`config.offline.dataset`).
    online: bool = True  # Learns from its own experience.


_AGENTS: dict[str, AgentEntry] = {}


def register(
    name: str,
    *,
    defaults: Callable[[], ConfigDict],
    build: Callable[[ConfigDict, int], Agent],
    validate: Callable[[ConfigDict], None] | None = None,
    several_agents: bool = False,
    check_environment: Callable[[ConfigDict, Any], None] | None = None,
    config_defaults: Mapping[str, Any] | None = None,
    offline: bool = False,
    online: bool = True,
) -> None:
    """Makes `config.agent.name = name` build agents with `build(config, num_updates)`.

    `num_updates` is how many times the run will call `learn`, for schedules
    such as a learning rate annealed to zero. `several_agents` says the agent
    trains every agent of a multi-agent environment, and only those;
    `check_environment(config, env)` refuses an environment the agent cannot
    train on (`check_environment` below). `config_defaults` are the
    values outside `config.agent` that the agent needs where the schema's own
    defaults do not suit it, by dotted field name (MAPPO's critic has a torso
    of its own: `{"network.shared_torso": False}`). `offline` says the agent
    learns from a dataset (`config.offline.dataset`, `podracer.offline`): its
    `learn` then takes a batch of sampled transitions, two timesteps each,
    rather than its own rollout; `online` that it learns from its own
    experience, which an agent of both kinds (IQL, ReBRAC) does where no
    dataset is given, e.g. fine-tuning an offline run's agent
    (`offline.start_from`). Registering a name again replaces it (a notebook
    cell may run twice).
    """
    _AGENTS[name] = AgentEntry(
        name, defaults, build, validate, several_agents, check_environment, dict(config_defaults or {}), offline, online
    )


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


def check_environment(config: ConfigDict, env: Any) -> None:
    """A `ConfigError` naming the field, before anything compiles, where the agent `config.agent.name` names cannot
    train on `env`: a single-agent agent on several agents, an agent of several on a single-agent environment,
    or what the agent's own `check_environment` refuses. `env` is Anakin's pure-JAX environment or one of
    Sebulba's host batches (`multi_agent.MultiAgent` says how many agents either has)."""
    entry, agents = lookup(config.agent.name), multi_agent.num_agents(env)
    if agents > 1 and not entry.several_agents:
        raise ConfigError(
            "agent.name",
            f"agent {config.agent.name!r} acts as one agent, and {config.env.name} has {agents}",
            f"train them with one of {[name for name in names() if _AGENTS[name].several_agents]}",
        )
    if entry.several_agents and not isinstance(env, multi_agent.MultiAgent):
        raise ConfigError(
            "env.name",
            f"agent {config.agent.name!r} trains the agents of a multi-agent environment, and {config.env.name} has one",
            "use a multi-agent environment (e.g. jaxmarl:MPE_simple_spread_v3, or pettingzoo:mpe2.simple_spread_v3 on "
            "sebulba), or a single-agent agent (e.g. ppo)",
        )
    if entry.check_environment is not None:
        entry.check_environment(config, env)
