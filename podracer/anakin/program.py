"""The Anakin program: acting, environment steps and learning compiled into one XLA computation.

Per device (pmap-style, under `jax.shard_map` over `DEVICE_AXIS`), one update
is: an unroll of T steps (`lax.scan`) over the device's batch of environments
(`vmap`), sampling actions from the current policy; then the agent's `learn`,
whose gradients are averaged across devices with `lax.pmean`. One dispatch runs
K updates (`lax.scan` again), so the host only launches programs and reads
metrics. Parameters and optimiser state are replicated; environment states and
actor keys are sharded along the batch. Every random draw belongs to one
environment (its own key), so the data does not depend on how the batch is
split over devices.
"""

from typing import Any, Callable

import chex
import jax
import jax.numpy as jnp
from flax import struct
from jax.sharding import Mesh, NamedSharding

from podracer.agents import Agent
from podracer.agents.learner import LearnerState
from podracer.agents.policy import sample_with_noise
from podracer.agents.trajectory import Trajectory
from podracer.envs.base import Environment
from podracer.envs.timestep import TimeStep
from podracer.envs.wrappers import split_keys
from podracer.topology import REPLICATED, SHARDED, sum_over_devices


@struct.dataclass
class AnakinState:
    learner: LearnerState  # Replicated.
    env_state: Any  # [B, ...], sharded over devices.
    timestep: TimeStep  # [B], sharded: the observation the next action is chosen from.
    actor_keys: chex.PRNGKey  # [B], sharded: one key per environment.
    learner_key: chex.PRNGKey  # Replicated.


# Which parts of the state live on every device and which are split along the batch.
STATE_SPECS = AnakinState(
    learner=REPLICATED, env_state=SHARDED, timestep=SHARDED, actor_keys=SHARDED, learner_key=REPLICATED
)


def init_state(key: chex.PRNGKey, env: Environment, agent: Agent, num_envs: int, mesh: Mesh) -> AnakinState:
    """The initial training state, placed on the mesh (parameters replicated, environments sharded)."""

    def init(key):
        params_key, env_key, actor_key, learner_key = jax.random.split(key, 4)
        env_state, timestep = env.reset(jax.random.split(env_key, num_envs))
        return AnakinState(
            learner=agent.init(params_key),
            env_state=env_state,
            timestep=timestep,
            actor_keys=jax.random.split(actor_key, num_envs),
            learner_key=learner_key,
        )

    shardings = jax.tree.map(lambda spec: NamedSharding(mesh, spec), STATE_SPECS)
    return jax.jit(init, out_shardings=shardings)(key)


def make_update(env: Environment, agent: Agent, unroll_length: int) -> Callable:
    """One update on one device: unroll, learn (gradients averaged over devices), episode statistics."""
    num_actions = env.action_spec().num_values

    def act_and_step(params, carry, gumbel_noise):
        env_state, timestep = carry
        logits, _ = agent.network.apply(params, timestep.observation)
        action = sample_with_noise(logits, gumbel_noise)
        env_state, next_timestep = env.step(env_state, action)
        finished = next_timestep.last()
        episode = (jnp.where(finished, env_state.episode_return, 0.0), jnp.where(finished, env_state.episode_length, 0))
        record = (timestep, action, logits, finished, episode)
        return (env_state, next_timestep), record

    def update(state: AnakinState, _) -> tuple[AnakinState, dict]:
        actor_keys, noise_keys = split_keys(state.actor_keys)
        noise = jax.vmap(lambda k: jax.random.gumbel(k, (unroll_length, num_actions)))(noise_keys)
        (env_state, last_timestep), (timesteps, actions, logits, finished, (returns, lengths)) = jax.lax.scan(
            lambda carry, g: act_and_step(state.learner.params, carry, g),
            (state.env_state, state.timestep),
            jnp.swapaxes(noise, 0, 1),
        )
        trajectory = Trajectory(
            timestep=jax.tree.map(lambda xs, x: jnp.concatenate([xs, x[None]]), timesteps, last_timestep),
            action=actions,
            behaviour_logits=logits,
        )
        learner_key, learn_key = jax.random.split(state.learner_key)
        learner, metrics = agent.learn(state.learner, trajectory, learn_key)
        metrics["episodes"], metrics["episode_return_sum"], metrics["episode_length_sum"] = sum_over_devices(
            (jnp.sum(finished, dtype=jnp.float32), jnp.sum(returns), jnp.sum(lengths, dtype=jnp.float32))
        )
        return AnakinState(learner, env_state, last_timestep, actor_keys, learner_key), metrics

    return update


def make_dispatch(env: Environment, agent: Agent, unroll_length: int, updates_per_dispatch: int, mesh: Mesh):
    """The compiled program of one dispatch: K updates on every device of `mesh`.

    Returns `dispatch(state) -> (state, metrics)` with metrics stacked over the K
    updates (identical on every device); the input state's buffers are donated.
    """
    update = make_update(env, agent, unroll_length)

    def run(state):
        return jax.lax.scan(update, state, None, length=updates_per_dispatch)

    per_device = jax.shard_map(run, mesh=mesh, in_specs=(STATE_SPECS,), out_specs=(STATE_SPECS, REPLICATED))
    return jax.jit(per_device, donate_argnums=0)
