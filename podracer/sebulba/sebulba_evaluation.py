"""Sebulba's evaluation: host environments of its own, stepped by the main thread, acting on an actor device.

The main thread, which writes the log records, plays the evaluation when one
is due (`podracer.run.evaluation`), with the copy of the learner state the
learner handed over with the record. It steps a batch of
`evaluation.episodes` environments made by the run's own factory, created
afresh with the same seed at every evaluation, and chooses their actions with
one jitted act step on the first actor device. The actor threads and the
learner go on meanwhile: nothing of theirs is read or changed.
"""

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from ml_collections import ConfigDict

from podracer.agents import Agent
from podracer.envs.actions import clip_to_spec
from podracer.envs.host import HostEnvFactory, HostEnvironment
from podracer.envs.timestep import TimeStep
from podracer.run import evaluation

# Evaluation environments' seeds start here, far from any training environment's (`settings.env_seed`).
SEED_OFFSET = 1 << 30


def make_evaluate(
    config: ConfigDict, make_env: HostEnvFactory, agent: Agent, device: jax.Device
) -> Callable[[Any], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """`evaluate(learner_state) -> (returns, lengths, ended)`, numpy `[episodes]`, one episode per environment."""
    settings = config.evaluation
    act = jitted_act(agent, settings.greedy)  # Runs where its committed inputs are: parameters and keys on `device`.
    keys = jax.device_put(jax.random.split(jax.random.key(settings.seed), settings.episodes), device)

    def evaluate(learner_state: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        env = make_env(settings.episodes, SEED_OFFSET + settings.seed)
        try:
            params = jax.device_put(agent.acting_params(learner_state), device)
            return play_host_episodes(env, act, params, agent.state_for(settings.episodes), keys, settings.max_steps)
        finally:
            env.close()

    return evaluate


def jitted_act(agent: Agent, greedy: bool) -> Callable:
    """`act(params, timestep, state, keys) -> (action, extras, state)`, jitted once: greedy or sampling."""
    return jax.jit(lambda params, timestep, state, keys: agent.act_with_state(params, timestep, state, keys, greedy))


def play_host_episodes(
    env: HostEnvironment,
    act: Callable,
    params: Any,
    agent_state: Any,
    keys: jax.Array,
    max_steps: int,
    on_step: Callable[[TimeStep], None] = lambda timestep: None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(returns, lengths, ended)` `[B]`: one episode in each of the host batch `env`'s environments, acting with
    `act(params, timestep, state, keys)` from `keys` `[B]` (`evaluation.tally`); `on_step` sees every timestep."""
    timestep = env.reset()
    totals, t = evaluation.initial_totals(env.num_envs, np), 0
    on_step(timestep)
    while t < max_steps and not totals[2].all():
        action, _, agent_state = act(params, timestep, agent_state, evaluation.step_keys(keys, t))
        timestep = env.step(np.asarray(clip_to_spec(action, env.action_spec())))
        on_step(timestep)
        totals, t = evaluation.tally(totals, timestep, np), t + 1
    return totals
