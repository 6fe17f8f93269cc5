"""A config file that brings a cooperative game of two agents, `cued_coordination`, and trains IPPO on it.

Each one-step episode lights one of `arms` arms, which both agents see; they
are paid 1 (each) only when both pull the lit arm, so a random pair earns
1/arms^2 and the joint optimum 1. With `masked`, every step makes one other
arm illegal for each agent (an action mask); with `global_state`, the
observation carries the lit arm as the global state for a centralised critic.
`cued_coordination_teams` is the same game for two agents of different kinds,
a team each (`CuedTeams`).

    podracer train --config tests/programs/coordination_game.py
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

import podracer
from podracer.config.errors import ConfigError
from podracer.envs.actions import ACTION_MASK
from podracer.envs.multi_agent import GLOBAL_STATE, LOCAL, MultiAgentEnvironment, agent_layout, restart, transition

AGENTS = 2


@dataclasses.dataclass(frozen=True)
class CuedCoordination(MultiAgentEnvironment):
    arms: int = 4
    masked: bool = False
    global_state: bool = True

    @property
    def num_agents(self) -> int:
        return AGENTS

    def reset(self, key):
        cue_key, mask_key = jax.random.split(key)
        cue = jax.random.randint(cue_key, (), 0, self.arms)
        illegal = (cue + 1 + jax.random.randint(mask_key, (AGENTS,), 0, self.arms - 1)) % self.arms  # Never the cue.
        state = (cue, jnp.arange(self.arms)[None] != illegal[:, None])
        return state, restart(self.observe(*state), agent_layout(self))

    def step(self, state, action):
        cue, _ = state
        reward = jnp.where(jnp.all(jnp.concatenate(jax.tree.leaves(action)) == cue), 1.0, 0.0)
        reward, done = (jax.tree.map(lambda n: jnp.full(n, value), agent_layout(self)) for value in (reward, False))
        return state, transition(self.observe(*state), reward, done, terminated=True, truncated=False)

    def observe(self, cue, legal) -> dict:
        lit = jax.nn.one_hot(cue, self.arms)
        observation = {LOCAL: jnp.broadcast_to(lit, (AGENTS, self.arms))}
        if self.masked:
            observation[ACTION_MASK] = legal
        if self.global_state:
            observation[GLOBAL_STATE] = lit
        return observation

    def observation_spec(self):
        shapes = jax.eval_shape(lambda: self.reset(jax.random.key(0))[1].observation)
        return jax.tree.map(lambda x: specs.Array(x.shape, x.dtype, name="observation"), shapes)

    def action_spec(self):
        return specs.BoundedArray((AGENTS,), np.int32, 0, self.arms - 1, name="action")


@dataclasses.dataclass(frozen=True)
class CuedTeams(CuedCoordination):
    """The game for two agents of different kinds, a team each: the "pointer" sees the lit arm one-hot over its
    `arms` arms, the "reader" one-hot over one arm more, which is never lit and never pays. A random pair meets at
    the lit arm 1/(arms (arms + 1)) of the time. Without action masks."""

    masked: bool = False

    def __post_init__(self):
        if self.masked:
            raise ValueError("the teams' game has no action masks")

    @property
    def teams(self) -> dict[str, int]:
        return {"pointer": 1, "reader": 1}

    def observe(self, cue, legal) -> dict:
        observation = super().observe(cue, legal)
        observation[LOCAL] = {"pointer": observation[LOCAL][:1], "reader": jax.nn.one_hot(cue, self.arms + 1)[None]}
        return observation

    def action_spec(self):
        return {
            team: specs.BoundedArray((1,), np.int32, 0, self.arms - 1 + extra, name="action")
            for team, extra in (("pointer", 0), ("reader", 1))
        }


podracer.envs.register("cued_coordination", CuedCoordination)
podracer.envs.register("cued_coordination_teams", CuedTeams)


def get_config():
    config = podracer.defaults("ippo")
    config.env.name = "cued_coordination"
    config.num_envs = 32
    config.unroll_length = 8
    config.total_steps = 32 * 8 * 40
    config.network.hidden_sizes = (32,)
    config.network.shared_torso = False
    config.optimizer.learning_rate = 3e-3
    return config


def refused_field(agent: str, env_name: str, **env_kwargs) -> str:
    """The field the `ConfigError` names when `agent` (its defaults, on `get_config`'s run) is checked against the
    environment `env_name` makes with `env_kwargs` (`agents.registry.check_environment`); fails if none is raised."""
    config = get_config()
    config.agent = podracer.defaults(agent).agent
    config.env.name = env_name
    try:
        podracer.agents.registry.check_environment(config, podracer.envs.make(env_name, **env_kwargs))
    except ConfigError as error:
        return error.field
    raise AssertionError(f"{agent} on {env_name} was not refused")
