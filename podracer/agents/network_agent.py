"""What the built-in actor-critic agents share: a policy-and-value network, an optax optimiser, categorical acting.

`network_agent(config, optimizer, learn)` completes an `Agent` around an
agent's own `learn`: `init` builds the network `config.network` describes for
the specs it is shown (`networks.init_params`) and the optimiser state, `act`
samples the policy head and hands back its logits as `extras` (the behaviour
policy that off-policy corrections need), and the acting parameters are the
network's.
"""

import functools
import operator
from collections.abc import Callable
from typing import Any

import chex
import optax
from ml_collections import ConfigDict

from podracer import field_checks
from podracer.agents import networks, policy
from podracer.agents.agent import Agent
from podracer.agents.optimizer import LearnerState, make_optimizer, sgd_step


def network_agent(config: ConfigDict, optimizer: optax.GradientTransformation, learn: Callable) -> Agent:
    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> LearnerState:
        params = networks.init_params(key, config.network, observation_spec, action_spec)
        return LearnerState(params, optimizer.init(params))

    return Agent(init=init, act=act, learn=learn, acting_params=operator.attrgetter("params"))


def one_step_agent(config: ConfigDict, loss: Callable, num_updates: int) -> Agent:
    """An agent whose `learn` is one gradient step of `loss(params, trajectory, apply_fn=..., **config.agent)`."""
    optimizer = make_optimizer(config.optimizer, gradient_steps=num_updates)
    loss_fn = functools.partial(loss, apply_fn=networks.apply, **hyperparameters(config.agent))

    def learn(state: LearnerState, trajectory: Any, key: chex.PRNGKey, axis_name=None) -> tuple[LearnerState, dict]:
        del key  # One gradient step on the whole trajectory draws nothing at random.
        return sgd_step(state, trajectory, loss_fn, optimizer, axis_name)

    return network_agent(config, optimizer, learn)


def act(params: networks.NetworkParams, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """A categorical sample per environment; the logits are the extras."""
    logits, _ = params.apply(observation)
    return policy.sample(key, logits), {"logits": logits}


def hyperparameters(agent_config: ConfigDict) -> dict:
    """Every field of `config.agent` but its name: the keyword arguments of the agent's loss."""
    return {field: value for field, value in agent_config.items() if field != "name"}


def validate_shared(config: ConfigDict) -> None:
    """Static checks of the fields every built-in actor-critic agent has."""
    field_checks.fraction(config, "agent.gamma", example=0.99)
    for field, example in (("agent.value_cost", 0.5), ("agent.entropy_cost", 0.01), ("agent.reward_clip", 1.0)):
        field_checks.number(config, field, example=example, at_least=0.0)
