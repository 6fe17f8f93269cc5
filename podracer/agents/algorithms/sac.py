"""Soft Actor-Critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications").

A tanh-squashed Gaussian actor, twin critics and an entropy temperature alpha
learned towards a target entropy, from replay (`off_policy`, which holds the
critics' loss and the replay loop SAC shares with TD3). Per gradient step
(Algorithm 1):

- critics towards the soft Bellman target (eqs. 3, 5-7 with twin critics):
    y = r + gamma d (min_i Q'_i(s', a') - alpha log pi(a'|s')),  a' ~ pi(.|s'),
  Q' the target critics;
- actor, reparameterised (eqs. 7 and 10): J_pi = E[alpha log pi(a|s) - min_i Q_i(s, a)],
  a = tanh(mean(s) + std(s) eps), whose log-probability has the tanh's
  correction (Appendix C, eq. 21; `continuous_networks.squashed_sample`);
- temperature (eq. 18): J(alpha) = E[-alpha log pi(a|s) - alpha H_target]
  = alpha (H - H_target), with H = -E[log pi(a|s)] of the actions the actor
  step drew; alpha = exp(log alpha), and the optimiser learns log alpha;
- targets: Q' <- tau Q + (1 - tau) Q' (`agent.target_tau`).

`agent.target_entropy` None is -D, for D action dimensions (Section 5). The
entropy is that of the squashed action in [-1, 1]^D, whatever the
environment's bounds. `act` samples a = tanh(u) (mapped onto the bounds),
its extras the Gaussian's `mean` and `log_std`; `greedy_act` takes tanh(mean).
"""

from typing import Any

import chex
import jax
import jax.numpy as jnp
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import off_policy, shared_fields
from podracer.agents.learning.optimizer import LearnerState, sgd_step
from podracer.agents.models import continuous_networks as cn
from podracer.config import field_checks
from podracer.config.errors import ConfigError

OWN_DEFAULTS = {
    "target_entropy": None,  # None: -D, for D action dimensions. At most 0.
    "initial_temperature": 1.0,  # alpha before its first step.
}
"""SAC's own fields of `config.agent`, which CQL keeps."""


def defaults() -> ConfigDict:
    return off_policy.defaults(**OWN_DEFAULTS)


def validate(config: ConfigDict) -> None:
    off_policy.validate(config)
    validate_own_fields(config)


def validate_own_fields(config: ConfigDict) -> None:
    """SAC's own fields, beside the off-policy agents' shared ones."""
    field_checks.number(config, "agent.initial_temperature", example=1.0, above=0.0)
    target = config.agent.target_entropy
    if target is not None and not field_checks.is_number(target, at_most=0.0):
        raise ConfigError(
            "agent.target_entropy",
            f"must be None (-D for D action dimensions) or a number <= 0, got {target!r}: a squashed Gaussian's "
            "entropy is at most D log 2, and SAC aims below it, at -1 per dimension",
            "set e.g. --config.agent.target_entropy=-1.0 for one action dimension",
        )


def temperature_loss(log_alpha: chex.Array, entropy: chex.Array, target_entropy: float) -> tuple[chex.Array, dict]:
    """J(alpha) = E[-alpha log pi - alpha H_target] = alpha (H - H_target) (eq. 18), H = -E[log pi] given."""
    alpha = jnp.exp(log_alpha)
    loss = alpha * (jax.lax.stop_gradient(entropy) - target_entropy)
    return loss, {"temperature_loss": loss}


def next_value(state: off_policy.OffPolicyState, batch: off_policy.Batch, key: chex.PRNGKey) -> chex.Array:
    """The soft value of the next states `[S]`: min_i Q'_i(s', a') - alpha log pi(a'|s'), a' ~ pi(.|s')."""
    observation = batch.next_observation
    outputs = state.actor.params(observation)
    action, log_prob = cn.squashed_sample(outputs, jax.random.normal(key, outputs["mean"].shape))
    target_critic = state.target_critic
    return off_policy.min_q(target_critic, observation, action) - jnp.exp(state.own.params) * log_prob


def actor_loss(
    actor: cn.Model, batch: off_policy.Batch, critic: cn.Model, alpha: chex.Array, key: chex.PRNGKey
) -> tuple[chex.Array, dict]:
    """J_pi = E[alpha log pi(a|s) - min_i Q_i(s, a)], a reparameterised (eqs. 7 and 10); metrics with H = -E[log pi]."""
    outputs = actor(batch.observation)
    action, log_prob = cn.squashed_sample(outputs, jax.random.normal(key, outputs["mean"].shape))
    loss = off_policy.masked_mean(alpha * log_prob - off_policy.min_q(critic, batch.observation, action), batch.valid)
    return loss, {"actor_loss": loss, "entropy": -off_policy.masked_mean(log_prob, batch.valid)}


def act(params: cn.Model, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """A squashed sample per environment, on the action bounds; the extras are the Gaussian's `mean` and `log_std`."""
    outputs = params(observation)
    action, _ = cn.squashed_sample(outputs, off_policy.per_environment_normal(key, outputs["mean"]))
    return cn.to_bounds(action, params.module), outputs


def greedy_act(params: cn.Model, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """tanh(mean), on the action bounds."""
    del key
    outputs = params(observation)
    return cn.to_bounds(jnp.tanh(outputs["mean"]), params.module), outputs


def build(config: ConfigDict, num_updates: int) -> Agent:
    return off_policy.build(config, num_updates, make_rules(config, num_updates))


def make_rules(config: ConfigDict, num_updates: int) -> off_policy.Rules:
    """SAC's part of the agent (`off_policy.Rules`): its squashed Gaussian actor, soft values and temperature."""
    agent_config, network = config.agent, config.network
    optimizer = off_policy.make_off_policy_optimizer(config, num_updates)

    def make_actor(size: int, low: tuple, high: tuple) -> cn.GaussianActor:
        return cn.GaussianActor(size, low, high, **cn.network_fields(network))

    def init_own(actor: cn.Model) -> LearnerState:
        log_alpha = jnp.log(jnp.float32(agent_config.initial_temperature))
        return LearnerState(log_alpha, optimizer.init(log_alpha))

    def improve(state: off_policy.OffPolicyState, batch: off_policy.Batch, key: chex.PRNGKey, axis_name):
        alpha = jnp.exp(state.own.params)

        def loss(actor: cn.Model, batch: off_policy.Batch) -> tuple[chex.Array, dict]:
            return actor_loss(actor, batch, state.critic.params, alpha, key)

        actor, metrics = sgd_step(state.actor, batch, loss, optimizer, axis_name)
        target_entropy = agent_config.target_entropy
        if target_entropy is None:
            target_entropy = -float(actor.params.module.action_size)

        def temperature(log_alpha: chex.Array, entropy: chex.Array) -> tuple[chex.Array, dict]:
            return temperature_loss(log_alpha, entropy, target_entropy)

        own, temperature_metrics = sgd_step(state.own, metrics["entropy"], temperature, optimizer, axis_name)
        target_critic = off_policy.polyak(state.critic.params, state.target_critic, agent_config.target_tau)
        state = state.replace(actor=actor, own=own, target_critic=target_critic)
        metrics = {"actor_grad_norm": metrics.pop("grad_norm"), **metrics, "alpha": alpha}
        return state, {**metrics, "temperature_loss": temperature_metrics["temperature_loss"]}

    return off_policy.Rules(make_actor, init_own, next_value, improve, act, greedy_act)


registry.register(
    "sac",
    defaults=defaults,
    build=build,
    validate=validate,
    config_defaults=shared_fields.REPLAY_CONFIG_DEFAULTS,
)
