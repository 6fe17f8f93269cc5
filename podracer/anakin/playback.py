"""Watching a trained agent: play episodes of a pure-JAX environment with `agent.act`, keeping every state.

    playback = podracer.anakin.play(env, agent, result.acting_params, jax.random.key(0), num_steps=40)
    boards = [render(jax.tree.map(lambda x: x[t, 0], playback.states)) for t in range(41)]

The states are the environment's own (not the training wrappers'), so its
own rendering code reads them. New episodes start as old ones end, exactly
as in training (`podracer.envs.wrap_for_training`), and a recurrent agent
carries its state from step to step, as in training.
"""

from typing import Any

import chex
import jax
import jax.numpy as jnp
from flax import struct

from podracer.agents import Agent
from podracer.anakin.program import split_unroll_keys
from podracer.envs import wrap_for_training
from podracer.envs.base import Environment
from podracer.envs.timestep import TimeStep


@struct.dataclass
class Playback:
    states: Any  # [T + 1, B, ...]: the environment's states, the first one included.
    timesteps: TimeStep  # [T + 1, B]: what the agent saw at each state.
    actions: chex.Array  # [T, B]: the action chosen at each of the first T timesteps.
    episode_returns: chex.Array  # [T + 1, B]: the undiscounted return so far (the episode's, at a LAST timestep).


def play(
    env: Environment, agent: Agent, acting_params: Any, key: chex.PRNGKey, num_steps: int, num_envs: int = 1
) -> Playback:
    """Acts for `num_steps` steps in `num_envs` copies of `env` from fresh episodes, on the default device."""
    training_env = wrap_for_training(env)

    @jax.jit
    def run(params, key):
        reset_key, actor_key = jax.random.split(key)
        state, timestep = training_env.reset(jax.random.split(reset_key, num_envs))
        _, step_keys = split_unroll_keys(jax.random.split(actor_key, num_envs), num_steps)

        def step(carry, keys):
            state, timestep, agent_state = carry
            action, _, agent_state = agent.act_with_state(params, timestep, agent_state, keys)
            next_state, next_timestep = training_env.step(state, action)
            return (next_state, next_timestep, agent_state), (next_state, next_timestep, action)

        carry = (state, timestep, agent.state_for(num_envs))
        _, (states, timesteps, actions) = jax.lax.scan(step, carry, step_keys)
        states, timesteps = jax.tree.map(
            lambda x, xs: jnp.concatenate([x[None], xs]), (state, timestep), (states, timesteps)
        )
        return Playback(states.env_state.env_state, timesteps, actions, states.episode_return)

    return run(jax.device_put(acting_params, jax.devices()[0]), key)
