"""Agents of different kinds in one environment: each team of alike agents trained by an agent of its own.

A heterogeneous multi-agent environment (`podracer.envs.multi_agent`) groups
its agents into teams whose agents share their spaces (MPE simple_tag's
adversaries and its runner, say). Its observation's `local` and
`action_mask` entries are dicts by team of `[N_t, ...]` arrays, and its
actions, rewards and discounts dicts of `[N_t]`, beside one step type and one
global state for all. `over_teams` gives each team its own agent (in IPPO and
MAPPO, `per_agent.lift` of PPO over the team's agents) and shows it only its
team's part of every observation, action and trajectory, with the global
state whole. No parameters are shared across teams: their observations or
actions differ.
"""

from collections.abc import Callable, Mapping
from typing import Any

import chex
import jax
import jax.numpy as jnp

from podracer.agents.agent import Agent
from podracer.agents.trajectory import Trajectory
from podracer.envs.actions import GLOBAL_STATE
from podracer.envs.timestep import TimeStep


def over_teams(team_agents: Mapping[str, Agent]) -> Agent:
    """One agent for an environment of teams, from each team's own agent (`team_agents`, by team name)."""
    teams = tuple(team_agents)
    recurrent = team_agents[teams[0]].recurrent

    def init(key: chex.PRNGKey, observation_spec: dict, action_spec: Mapping[str, Any]) -> dict:
        keys = jax.random.split(key, len(teams))
        return {
            team: team_agents[team].init(keys[i], team_observation(observation_spec, team), action_spec[team])
            for i, team in enumerate(teams)
        }

    def learn(state: dict, trajectory: Trajectory, key: chex.PRNGKey, axis_name=None) -> tuple[dict, dict]:
        keys, learned, metrics = jax.random.split(key, len(teams)), {}, []
        for i, team in enumerate(teams):
            learned[team], team_metrics = team_agents[team].learn(
                state[team], team_trajectory(trajectory, team, recurrent), keys[i], axis_name
            )
            metrics.append(team_metrics)
        return learned, jax.tree.map(lambda *values: jnp.mean(jnp.stack(values)), *metrics)  # The teams' mean.

    def acting_params(state: dict) -> dict:
        return {team: team_agents[team].acting_params(state[team]) for team in teams}

    def initial_state(batch_size: int) -> dict:
        return {team: team_agents[team].initial_state(batch_size) for team in teams}

    has_greedy = all(agent.greedy_act is not None for agent in team_agents.values())
    return Agent(
        init=init,
        act=_teams_act(team_agents, lambda agent: agent.act, recurrent),
        learn=learn,
        acting_params=acting_params,
        initial_state=initial_state if recurrent else None,
        greedy_act=_teams_act(team_agents, lambda agent: agent.greedy_act, recurrent) if has_greedy else None,
    )


def _teams_act(team_agents: Mapping[str, Agent], which: Callable[[Agent], Callable], recurrent: bool) -> Callable:
    """Every team's `act` (or `greedy_act`, as `which` picks) on its part of the batch, each environment's key
    folded with the team's index so that the teams draw apart."""

    def team_keys(key: chex.PRNGKey, index: int) -> chex.PRNGKey:
        return jax.vmap(jax.random.fold_in, (0, None))(key, index)

    if recurrent:

        def recurrent_act(params: dict, timestep: TimeStep, state: dict, key: chex.PRNGKey):
            outputs = {
                team: which(agent)(params[team], team_timestep(timestep, team), state[team], team_keys(key, i))
                for i, (team, agent) in enumerate(team_agents.items())
            }
            return tuple({team: output[part] for team, output in outputs.items()} for part in range(3))

        return recurrent_act

    def feed_forward_act(params: dict, observation: dict, key: chex.PRNGKey):
        outputs = {
            team: which(agent)(params[team], team_observation(observation, team), team_keys(key, i))
            for i, (team, agent) in enumerate(team_agents.items())
        }
        return tuple({team: output[part] for team, output in outputs.items()} for part in range(2))

    return feed_forward_act


def team_observation(observation: dict, team: str) -> dict:
    """A team's part of an observation (or of its spec): its entry of every by-team dict, and the global state."""
    return {key: value if key == GLOBAL_STATE else value[team] for key, value in observation.items()}


def team_timestep(timestep: TimeStep, team: str) -> TimeStep:
    """A team's part of a timestep: its rewards, discounts and observation, with the episode's step type."""
    return TimeStep(
        timestep.step_type, timestep.reward[team], timestep.discount[team], team_observation(timestep.observation, team)
    )


def team_trajectory(trajectory: Trajectory, team: str, recurrent: bool) -> Trajectory:
    """A team's part of a trajectory: its timesteps, actions, extras and (recurrent) states."""
    return Trajectory(
        team_timestep(trajectory.timestep, team),
        trajectory.action[team],
        trajectory.extras[team],
        trajectory.state[team] if recurrent else (),
    )
