"""Behaviour cloning: a policy fit to the dataset's actions by supervised learning, the baseline of offline RL.

- Continuous actions: a deterministic actor mu(s) in [-1, 1]^D (TD3's,
  `continuous_networks.DeterministicActor`) regressed onto the dataset's
  actions, mapped into the unit box: J = E[|mu(s) - a|^2] / D, the mean
  squared error of TD3+BC's cloning term (Fujimoto and Gu 2021, eq. 3,
  without the Q term); it acts with mu(s).
- Discrete actions: logits over the actions from the network `config.network`
  describes (an MLP, or a convolutional torso for frames), trained by
  cross-entropy, J = -E[log softmax(logits(s))_a] (Pomerleau 1991; the
  discrete BC baseline of Kumar et al. 2020); it samples the softmax, and
  its greedy action is the most likely one.

One gradient step per `learn` call on the sampled batch, gradients averaged
over the devices; nothing is drawn at random, so the update is the same on
any number of devices.
"""

from typing import Any

import chex
import jax
import jax.numpy as jnp
from dm_env import specs
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import shared_fields
from podracer.agents.learning.optimizer import LearnerState, make_optimizer, sgd_step
from podracer.agents.models import continuous_networks as cn
from podracer.agents.models import networks
from podracer.agents.trajectory import Trajectory
from podracer.config import field_checks


def defaults() -> ConfigDict:
    return ConfigDict({"batch_size": 256})  # Transitions per gradient step, over every device.


def validate(config: ConfigDict) -> None:
    field_checks.integer(config, "agent.batch_size", at_least=1, example=256)
    shared_fields.require_feed_forward(config, "behaviour cloning fits a feed-forward policy to single transitions")


def regression_loss(actor: cn.Model, observation: Any, action: chex.Array) -> tuple[chex.Array, dict]:
    """E[|mu(s) - a|^2] / D for actions `[S, D]` in the environment's bounds (mapped into [-1, 1]^D)."""
    predicted = actor(observation)
    target = cn.from_bounds(action, actor.module)
    chex.assert_equal_shape([predicted, target])
    loss = jnp.mean((predicted - target) ** 2)
    return loss, {"loss": loss}


def cross_entropy_loss(
    network: networks.NetworkParams, observation: Any, action: chex.Array
) -> tuple[chex.Array, dict]:
    """-E[log softmax(logits(s))_a] for actions `[S]`, and how often the most likely action is the dataset's."""
    _, logits = network.step((), observation)
    chex.assert_rank(logits, 2)
    log_probs = jax.nn.log_softmax(logits)
    loss = -jnp.mean(jnp.take_along_axis(log_probs, action[:, None], axis=-1))
    accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == action)
    return loss, {"loss": loss, "accuracy": accuracy}


def act(params: Any, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """mu(s) on the action bounds, or an action sampled from the softmax, per environment."""
    if isinstance(params, cn.Model):
        return greedy_act(params, observation, key)
    _, logits = params.step((), observation)
    return jax.vmap(jax.random.categorical)(key, logits).astype(jnp.int32), {}


def greedy_act(params: Any, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """mu(s) on the action bounds, or the most likely action."""
    del key
    if isinstance(params, cn.Model):
        return cn.to_bounds(params(observation), params.module), {}
    _, logits = params.step((), observation)
    return jnp.argmax(logits, axis=-1).astype(jnp.int32), {}


def build(config: ConfigDict, num_updates: int) -> Agent:
    network = shared_fields.network_settings(config)
    optimizer = make_optimizer(shared_fields.optimizer_settings(config), gradient_steps=num_updates)

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> LearnerState:
        if isinstance(action_spec, specs.DiscreteArray):
            params = networks.init_module(
                key, networks.make_q_network(network, observation_spec, action_spec), observation_spec
            )
        else:
            size, low, high = cn.bounds(action_spec)
            actor = cn.DeterministicActor(size, low, high, **cn.network_fields(network))
            params = cn.init_model(key, actor, observation_spec)
        return LearnerState(params, optimizer.init(params))

    def learn(state: LearnerState, batch: Trajectory, key: chex.PRNGKey, axis_name=None):
        del key  # Supervised learning draws nothing.
        observation = jax.tree.map(lambda x: x[0], batch.timestep.observation)
        loss = regression_loss if isinstance(state.params, cn.Model) else cross_entropy_loss
        return sgd_step(
            state, (observation, batch.action[0]), lambda params, data: loss(params, *data), optimizer, axis_name
        )

    return Agent(init=init, act=act, learn=learn, acting_params=lambda state: state.params, greedy_act=greedy_act)


registry.register(
    "bc",
    defaults=defaults,
    build=build,
    validate=validate,
    config_defaults=shared_fields.OFFLINE_CONFIG_DEFAULTS,
    offline=True,
    online=False,
)
