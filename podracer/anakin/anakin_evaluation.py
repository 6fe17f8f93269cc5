"""Anakin's evaluation program: whole episodes of environments of its own, compiled on the training mesh.

`make_evaluate` compiles, once, a program that plays `evaluation.episodes`
episodes, split over the mesh's devices like the training environments
(`jax.shard_map`), each environment from its own fixed key until its first
episode ends (`lax.while_loop`, at most `evaluation.max_steps` steps). It
reads the learner state and changes nothing: the training program's state,
keys and records are those of a run without evaluation. A population's
members are evaluated alike, each with its own parameters.
"""

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from ml_collections import ConfigDict

from podracer.anakin.program import AgentFor, AnakinState, over_members, state_specs
from podracer.devices import per_device
from podracer.devices.topology import DEVICE_AXIS, REPLICATED, SHARDED, per_device_program
from podracer.envs.base import Environment
from podracer.envs.host_suites.jax_on_host import evaluation_keys
from podracer.envs.wrappers import wrap_for_evaluation
from podracer.run import evaluation


def play_episodes(
    env: Environment, agent: Any, params: Any, keys: chex.PRNGKey, greedy: bool, max_steps: int
) -> tuple[chex.Array, chex.Array, chex.Array]:
    """`(returns, lengths, ended)`, each `[B]`: one episode per key `[B]` of the batched `env`, acted on by `agent`
    (`evaluation.tally`)."""
    reset_keys, act_keys = evaluation_keys(keys)
    env_state, timestep = env.reset(reset_keys)
    totals = evaluation.initial_totals(keys.shape[0], jnp)
    initial = (jnp.int32(0), env_state, timestep, agent.state_for(keys.shape[0]), totals)

    def playing(carry):
        t, *_, (_, _, ended) = carry
        return (t < max_steps) & ~jnp.all(ended)

    def step(carry):
        t, env_state, timestep, agent_state, totals = carry
        action, _, agent_state = agent.act_with_state(
            params, timestep, agent_state, evaluation.step_keys(act_keys, t), greedy
        )
        env_state, timestep = env.step(env_state, action)
        return t + 1, env_state, timestep, agent_state, evaluation.tally(totals, timestep)

    return jax.lax.while_loop(playing, step, initial)[-1]


def make_evaluate(
    env: Environment,
    agent_for: AgentFor,
    config: ConfigDict,
    mesh: Mesh,
    abstract_state: AnakinState,
    hyperparameters: dict,
    members: int = 0,
) -> Callable:
    """`evaluate(learner, hyperparameters) -> (returns, lengths, ended)`, numpy `[episodes]` (`[members, episodes]`).

    Compiled here, for the training state's shapes and layout (`abstract_state`,
    a population's with its member axis), so that what cannot be evaluated
    fails as the run builds.
    """
    settings = config.evaluation
    episodes = settings.episodes
    padded = -(-episodes // mesh.size) * mesh.size  # Whole batches per device; the extra episodes are dropped.
    # Made on the mesh, split like the episodes (in every process of a job alike), so that no call moves them there.
    sharded = NamedSharding(mesh, SHARDED)
    keys = jax.jit(lambda: jax.random.split(jax.random.key(settings.seed), padded), out_shardings=sharded)()
    batched = wrap_for_evaluation(env)
    out_spec = PartitionSpec(None, DEVICE_AXIS) if members else SHARDED

    def on_device(learner, hyperparameters, keys):
        def member(learner, varied):
            agent = agent_for(varied)
            params = agent.acting_params(per_device.local(learner))
            return play_episodes(batched, agent, params, keys, settings.greedy, settings.max_steps)

        return over_members(member, members, config.members_in_parallel)(learner, hyperparameters)

    learner_specs = state_specs(abstract_state, members).learner
    program = jax.jit(
        per_device_program(on_device, mesh, (learner_specs, REPLICATED, SHARDED), (out_spec, out_spec, out_spec))
    )
    program = program.lower(abstract_state.learner, hyperparameters, keys).compile()

    def evaluate(learner: Any, hyperparameters: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        outputs = jax.device_get(program(learner, hyperparameters, keys))
        return tuple(np.asarray(x)[..., :episodes] for x in outputs)

    return evaluate
