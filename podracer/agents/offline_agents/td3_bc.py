"""TD3+BC (Fujimoto and Gu 2021, "A Minimalist Approach to Offline Reinforcement Learning").

TD3 (`podracer.agents.algorithms.td3`: twin critics, clipped double Q, target
policy smoothing, delayed actor and target updates) learning from a dataset,
its actor regularised towards the dataset's actions (eq. 3):

    pi = argmax_pi E_(s, a)~D [lambda Q_1(s, pi(s)) - (pi(s) - a)^2],   lambda = alpha / (1/N sum_i |Q_1(s_i, pi(s_i))|)

with alpha `agent.alpha` (2.5 in the paper) and lambda held constant in the
gradient; N is the whole batch, over every device. Actions are in TD3's unit
box [-1, 1]^D. The paper also normalises the dataset's states, which this
agent leaves to the dataset (Pendulum's need none).
"""

import chex
import jax
import jax.numpy as jnp
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import off_policy, shared_fields, td3
from podracer.agents.models import continuous_networks as cn
from podracer.config import field_checks
from podracer.devices import collectives


def defaults() -> ConfigDict:
    alpha = 2.5  # How much Q weighs against the behaviour cloning term.
    return off_policy.defaults(offline=True, **td3.OWN_DEFAULTS, alpha=alpha)


def validate(config: ConfigDict) -> None:
    off_policy.validate(config, offline=True)
    td3.validate_own_fields(config)
    field_checks.number(config, "agent.alpha", example=2.5, at_least=0.0)


def actor_loss(alpha: float) -> td3.ActorLoss:
    """-lambda E[Q_1(s, pi(s))] + E[(pi(s) - a)^2], the squares averaged over the action's dimensions (eq. 3)."""

    def loss(
        actor: cn.Model, batch: off_policy.Batch, critic: cn.Model, axis_name: str | None
    ) -> tuple[chex.Array, dict]:
        policy_action = actor(batch.observation)
        chex.assert_equal_shape([policy_action, batch.action])
        q_first = critic(batch.observation, policy_action)[..., 0]
        lambda_ = alpha * inverse_mean_magnitude(q_first, batch.valid, axis_name)
        cloning = off_policy.masked_mean(jnp.mean((policy_action - batch.action) ** 2, axis=-1), batch.valid)
        loss = -lambda_ * off_policy.masked_mean(q_first, batch.valid) + cloning
        return loss, {"actor_loss": loss, "bc_loss": cloning, "lambda": lambda_}

    return loss


def inverse_mean_magnitude(q: chex.Array, valid: chex.Array, axis_name: str | None) -> chex.Array:
    """1 / mean |Q| over the whole batch (every device's), held constant: what scales Q against the cloning term
    in TD3+BC (eq. 3) and ReBRAC, so that the balance does not depend on the rewards' scale."""
    return 1.0 / jax.lax.stop_gradient(collectives.mean(off_policy.masked_mean(jnp.abs(q), valid), axis_name))


def build(config: ConfigDict, num_updates: int) -> Agent:
    rules = td3.make_rules(config, num_updates, actor_loss(config.agent.alpha))
    return off_policy.build(config, num_updates, rules, offline=True)


registry.register(
    "td3_bc",
    defaults=defaults,
    build=build,
    validate=validate,
    config_defaults=shared_fields.OFFLINE_CONFIG_DEFAULTS,
    offline=True,
    online=False,
)
