"""Agents written once for both architectures: a network, an optimiser and a `learn` function.

`learn(learner_state, trajectory, key) -> (learner_state, metrics)` runs inside a
per-device program over `DEVICE_AXIS` and averages gradients across it, so
Anakin and Sebulba call the very same function.
"""

import functools
from typing import Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax
from ml_collections import ConfigDict

from podracer.agents import actor_critic, impala, ppo
from podracer.agents.learner import LearnerState, make_optimizer, sgd_step
from podracer.agents.networks import ActorCritic, make_network
from podracer.agents.trajectory import Trajectory
from podracer.envs.base import Environment

AGENTS = ("actor_critic", "ppo", "impala")


class Agent(NamedTuple):
    network: ActorCritic
    init: Callable[[chex.PRNGKey], LearnerState]
    learn: Callable[[LearnerState, Trajectory, chex.PRNGKey], tuple[LearnerState, dict]]


def gradient_steps_per_update(agent_config: ConfigDict) -> int:
    if agent_config.name == "ppo":
        return agent_config.num_epochs * agent_config.num_minibatches
    return 1


def make_agent(config: ConfigDict, env: Environment, num_updates: int) -> Agent:
    """Builds the agent named `config.agent.name` for `env`, to run `num_updates` updates."""
    agent_config, opt = config.agent, config.optimizer
    network = make_network(config.network, env.action_spec().num_values)
    anneal_steps = num_updates * gradient_steps_per_update(agent_config) if opt.anneal_lr else 0
    optimizer = make_optimizer(opt.name, opt.learning_rate, opt.max_grad_norm, opt.eps, anneal_steps)

    def init(key: chex.PRNGKey) -> LearnerState:
        dummy = jax.tree.map(lambda s: jnp.zeros((1,) + s.shape, s.dtype), env.observation_spec())
        params = network.init(key, dummy)
        return LearnerState(params, optimizer.init(params))

    return Agent(network, init, _make_learn(agent_config, network.apply, optimizer))


def _make_learn(agent_config: ConfigDict, apply_fn: Callable, optimizer: optax.GradientTransformation) -> Callable:
    # Every field of `config.agent` but its name is a keyword argument of the agent's loss (or PPO's learn).
    hyperparameters = {field: value for field, value in agent_config.items() if field != "name"}
    if agent_config.name == "ppo":
        return functools.partial(ppo.learn, apply_fn=apply_fn, optimizer=optimizer, **hyperparameters)
    if agent_config.name in _SINGLE_STEP_LOSSES:
        loss_fn = functools.partial(_SINGLE_STEP_LOSSES[agent_config.name], apply_fn=apply_fn, **hyperparameters)
        # One replicated gradient step on the whole trajectory; the key is unused.
        return lambda state, trajectory, key: sgd_step(state, trajectory, loss_fn, optimizer)
    raise ValueError(f"Unknown agent {agent_config.name!r}; choose one of {AGENTS}.")


# Agents whose `learn` is a single gradient step of their loss.
_SINGLE_STEP_LOSSES = {"actor_critic": actor_critic.loss, "impala": impala.loss}
