"""LPG meta-training's members: the agents of a population, each living out lifetimes on environments of its own.

A `Family` is one environment (name and kwargs) with its number of members;
a `Member` is one agent's Anakin state with its age and lifetime. A lifetime
starts on a newly drawn layout of its environment (`start_member`), and a
member whose lifetime has run out is started afresh at the next meta-update's
start (`renew_ended`); the program's first state holds members that have
already ended (`ended_members`), so the first meta-update starts them all.
`Settings` are what the meta-training program (`podracer.anakin.meta_program`)
is made of besides its families and its agent.
"""

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp
from flax import struct

from podracer.agents.agent import Agent
from podracer.agents.meta import lpg_rule
from podracer.anakin.program import AnakinState, over_members
from podracer.envs import wrap_for_training
from podracer.envs.base import Environment
from podracer.envs.lpg.lifetimes import LifetimeEnvironment
from podracer.envs.wrappers import Wrapper, select_tree


@dataclasses.dataclass(frozen=True)
class Family:
    """Members on one environment (name and kwargs): `env` as built, `members` over all devices."""

    label: str
    env: Environment
    members: int


@dataclasses.dataclass(frozen=True)
class Settings:
    """What the program is made of, besides its families and its agent."""

    rule: lpg_rule.RuleSettings
    envs_per_member: int  # B: each member acts in B copies of its environment, on one layout.
    unroll_length: int  # T.
    inner_updates: int  # K.
    lifetime: tuple[int, int]  # A lifetime's inner updates, drawn uniformly from [low, high].
    gamma: float
    prediction_cost: float  # alpha_y of Eq. 2.
    costs: tuple[float, float, float, float]  # Eq. 4's beta_0..beta_3.
    td_lambda: float  # Of the meta-objective's return and of the critic's targets.


@struct.dataclass
class Member:
    anakin: AnakinState  # Learner state (agent, critic), its B environments, its actor keys.
    age: jax.Array  # Inner updates done in this lifetime.
    lifetime: jax.Array  # This lifetime's inner updates.
    key: chex.PRNGKey  # Draws the next lifetime.


@dataclasses.dataclass(frozen=True)
class _OnLayout(Wrapper):
    """`env` whose `reset` starts a lifetime on `layout`: a member's B copies share one layout."""

    layout: Any

    def reset(self, key: chex.PRNGKey):
        return self.env.start_lifetime(self.layout, key)


def start_member(family: Family, agent: Agent, settings: Settings, key: chex.PRNGKey) -> Member:
    """A fresh lifetime: new parameters and optimiser state, a new layout (`draw_layout`) or the env's `reset`."""
    params_key, layout_key, env_key, actor_key, learner_key, life_key, key = jax.random.split(key, 7)
    env = family.env
    if isinstance(env, LifetimeEnvironment):
        env = _OnLayout(env, env.draw_layout(layout_key))
    batch = settings.envs_per_member
    env_state, timestep = wrap_for_training(env).reset(jax.random.split(env_key, batch))
    learner = agent.init(params_key, family.env.observation_spec(), family.env.action_spec())
    anakin = AnakinState(
        learner, env_state, timestep, agent.state_for(batch), jax.random.split(actor_key, batch), learner_key
    )
    low, high = settings.lifetime
    return Member(anakin, jnp.int32(0), jax.random.randint(life_key, (), low, high + 1), key)


def start_members(family: Family, agent: Agent, settings: Settings, keys: chex.PRNGKey) -> Member:
    """`start_member` for keys `[n]`, one member at a time (a batched QR deadlocks a 1-thread XLA:CPU pool)."""
    return over_members(lambda key: start_member(family, agent, settings, key), keys.shape[0], in_parallel=1)(keys)


def renew_ended(family: Family, agent: Agent, settings: Settings, member: Member) -> Member:
    """The members at a meta-update's start: those whose lifetime has ended (all of them in `make_init`'s state)
    started afresh (`start_members`), the others as they were."""
    ended = member.age >= member.lifetime

    def renew(member):
        return select_tree(ended, start_members(family, agent, settings, member.key), member)

    return jax.lax.cond(jnp.any(ended), renew, lambda member: member, member)


def ended_members(family: Family, agent: Agent, settings: Settings, keys: chex.PRNGKey) -> Member:
    """Members `[n]` of `start_members`' shapes, all zeros (keys: `keys[0]`'s), but their own `key`s: ended."""
    shapes = jax.eval_shape(lambda keys: start_members(family, agent, settings, keys), keys)

    def zeros(leaf):
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            return jnp.broadcast_to(keys[0], leaf.shape)
        return jnp.zeros(leaf.shape, leaf.dtype)

    return jax.tree.map(zeros, shapes).replace(key=keys)
