"""Sebulba's inference step: the trajectory keeps the policy's sample, the environment gets it clipped."""

import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

import podracer
from podracer import agents
from podracer.envs.timestep import TimeStep, from_flags
from podracer.sebulba.unroll import make_act_step

OBSERVATION_SPEC = specs.Array((3,), np.float32)
ACTION_SPEC = specs.BoundedArray((2,), np.float32, minimum=-0.5, maximum=0.5)


def _first_timesteps(num_envs: int) -> TimeStep:
    """The timesteps `[num_envs]` that start an episode in every environment, with zero observations `[3]`."""
    none = np.zeros(num_envs, bool)
    return from_flags(jnp.zeros((num_envs, 3)), np.zeros(num_envs), none, none, first=~none)


def test_act_step_clips_only_the_environment_copy_of_real_actions():
    agent = agents.make(podracer.defaults("ppo", "sebulba"), num_updates=1)
    params = agent.acting_params(agent.init(jax.random.key(0), OBSERVATION_SPEC, ACTION_SPEC))
    act_step = make_act_step(agent, ACTION_SPEC)
    timestep = _first_timesteps(256)
    action, env_action, extras, state, next_key = act_step(params, timestep, (), jax.random.key(1))
    assert state == ()  # A feed-forward agent's state passes through.
    action, env_action = np.asarray(action), np.asarray(env_action)
    assert (np.abs(action) > 0.5).mean() > 0.5  # The initial policy is N(0, 1): most samples are out of bounds.
    np.testing.assert_array_equal(env_action, np.clip(action, -0.5, 0.5))
    assert set(extras) == {"mean", "log_std"} and extras["mean"].shape == (256, 2)
    again = act_step(params, timestep, state, next_key)[0]
    assert not np.array_equal(again, action)  # The thread's key moves on.


def test_act_step_passes_discrete_actions_through():
    agent = agents.make(podracer.defaults("impala", "sebulba"), num_updates=1)
    params = agent.acting_params(agent.init(jax.random.key(0), OBSERVATION_SPEC, specs.DiscreteArray(4)))
    action, env_action, extras, _, _ = make_act_step(agent, specs.DiscreteArray(4))(
        params, _first_timesteps(8), (), jax.random.key(1)
    )
    np.testing.assert_array_equal(action, env_action)
    assert set(extras) == {"logits"}
