"""IPPO and MAPPO: PPO for every agent of a multi-agent environment, with a local or a centralised critic.

IPPO (independent PPO; de Witt et al. 2020, "Is Independent Learning All You
Need in the StarCraft Multi-Agent Challenge?") trains each agent with PPO's
clipped objective (`podracer.agents.algorithms.ppo`) on its own observation. MAPPO (Yu et
al. 2022, "The Surprising Effectiveness of PPO in Cooperative Multi-Agent
Games") is the same with a centralised value function: the critic reads the
environment's global state (Section 3, "centralized value function inputs"),
and the policy its agent's own observation, as in execution. Both are the
single-agent PPO lifted by `per_agent.lift`:

- `agent.share_parameters`: one network for all agents, which reads each
  agent's one-hot id beside its observation (and beside the global state in
  the critic), or one network per agent, vmapped over the agents;
- `agent.critic`: "local" (IPPO's default) or "centralised" (MAPPO's), whose
  value torso is the critic's own (`network.shared_torso=False`).

Agents of different kinds (an environment's `teams`) get a network each, one
team at a time (`teams.over_teams`).

With a recurrent core (`network.core`) policy and critic each have their own,
as the MAPPO paper's recurrent networks and JaxMARL's `mappo_rnn` baselines do.
"""

from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import ppo
from podracer.agents.several_agents import per_agent, teams
from podracer.config import field_checks
from podracer.config.errors import ConfigError
from podracer.envs import env_registry, multi_agent

CRITICS = ("local", "centralised")
OWN_FIELDS = ("share_parameters", "critic")  # The fields PPO itself does not read.


def defaults(critic: str = "local") -> ConfigDict:
    config = ppo.defaults()
    config.share_parameters = True
    config.critic = critic
    return config


def validate(config: ConfigDict) -> None:
    ppo.validate(config)
    field_checks.boolean(config, "agent.share_parameters")
    field_checks.choice(config, "agent.critic", CRITICS)
    if config.agent.critic == "centralised" and config.network.shared_torso:
        raise ConfigError(
            "network.shared_torso",
            "a centralised critic reads the global state through a torso of its own, not the policy's",
            "set --config.network.shared_torso=False",
        )


def build(config: ConfigDict, num_updates: int) -> Agent:
    ppo_config = config.copy_and_resolve_references()
    with ppo_config.unlocked():
        for field in OWN_FIELDS:
            del ppo_config.agent[field]
    single = ppo.build(ppo_config, num_updates, centralised_critic=config.agent.critic == "centralised")
    layout = env_registry.agent_layout(config)  # A recurrent state per agent, and one agent per team of alike ones.
    if isinstance(layout, dict):
        return teams.over_teams({team: per_agent.lift(single, False, size) for team, size in layout.items()})
    return per_agent.lift(single, config.agent.share_parameters, layout)


def check_environment(config: ConfigDict, env: multi_agent.MultiAgent) -> None:
    """`ConfigError`s naming the field: a centralised critic needs the environment's global state, and agents of
    different kinds (teams) cannot share one network."""
    if env.teams is not None and config.agent.share_parameters:
        raise ConfigError(
            "agent.share_parameters",
            f"the agents of {config.env.name} differ in their spaces ({env.teams}), so one network cannot serve all",
            "set --config.agent.share_parameters=False: a network per agent, vmapped within each team",
        )
    if config.agent.critic == "centralised" and not env.has_global_state():
        raise ConfigError(
            "agent.critic",
            f"a centralised critic reads the environment's global state, and {config.env.name} observes none",
            "set --config.agent.critic=local",
        )


for _name, _critic in (("ippo", "local"), ("mappo", "centralised")):
    registry.register(
        _name,
        defaults=lambda critic=_critic: defaults(critic),
        build=build,
        validate=validate,
        several_agents=True,
        check_environment=check_environment,
        config_defaults={"network.shared_torso": False} if _critic == "centralised" else None,
    )
