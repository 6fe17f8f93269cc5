"""ReBRAC (Tarasov et al. 2023, "Revisiting the Minimalist Approach to Offline Reinforcement Learning").

TD3+BC (`td3_bc`) with the design choices the paper found to matter: a
behaviour-cloning penalty in the critic's target as well as in the actor
(eq. 3), LayerNorm in every hidden layer (`network.layer_norm`, on in the
configs), larger batches and learning rates. Per gradient step:

- critics towards y = r + gamma d (min_i Q'_i(s', a') - beta_2 |a' - a'_D|^2),
  a' TD3's smoothed target action and a'_D the dataset's next action,
  beta_2 `agent.critic_bc_coef`;
- every `agent.policy_delay` steps the actor minimises
  E[beta_1 |pi(s) - a|^2 - lambda min_i Q_i(s, pi(s))], lambda = 1 / mean |min_i Q_i(s, pi(s))| held
  constant (over the whole batch, every device), beta_1 `agent.actor_bc_coef`.

Squares sum over the action's dimensions in [-1, 1]^D, as in the authors'
code. beta_1 and beta_2 are tuned per dataset in the paper (D4RL's locomotion:
beta_1 from 0.001 to 1, beta_2 from 0 to 0.1).

Without `offline.dataset` ReBRAC learns online from each device's replay
buffer, as TD3 does, with both penalties in place, a'_D the action the agent
took at the next observation: the authors' fine-tuning, started from an
offline run with `offline.start_from`, whose dataset the buffer first holds.
"""

import chex
import jax.numpy as jnp
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import off_policy, shared_fields, td3
from podracer.agents.models import continuous_networks as cn
from podracer.agents.offline_agents import td3_bc
from podracer.config import field_checks


def defaults() -> ConfigDict:
    return off_policy.defaults(**td3.OWN_DEFAULTS, actor_bc_coef=0.01, critic_bc_coef=0.01, batch_size=1024)


def validate(config: ConfigDict) -> None:
    off_policy.validate(config, offline=shared_fields.learns_from_dataset(config))
    td3.validate_own_fields(config)
    for field, example in (("actor_bc_coef", 0.01), ("critic_bc_coef", 0.01)):
        field_checks.number(config, f"agent.{field}", example=example, at_least=0.0)


def actor_loss(actor_bc_coef: float) -> td3.ActorLoss:
    """E[beta_1 |pi(s) - a|^2 - lambda min_i Q_i(s, pi(s))], lambda = 1 / mean |min_i Q_i(s, pi(s))| (eq. 3)."""

    def loss(
        actor: cn.Model, batch: off_policy.Batch, critic: cn.Model, axis_name: str | None
    ) -> tuple[chex.Array, dict]:
        policy_action = actor(batch.observation)
        chex.assert_equal_shape([policy_action, batch.action])
        q = off_policy.min_q(critic, batch.observation, policy_action)
        lambda_ = td3_bc.inverse_mean_magnitude(q, batch.valid, axis_name)
        cloning = jnp.sum((policy_action - batch.action) ** 2, axis=-1)
        loss = off_policy.masked_mean(actor_bc_coef * cloning - lambda_ * q, batch.valid)
        return loss, {"actor_loss": loss, "bc_loss": off_policy.masked_mean(cloning, batch.valid), "lambda": lambda_}

    return loss


def build(config: ConfigDict, num_updates: int) -> Agent:
    rules = td3.make_rules(config, num_updates, actor_loss(config.agent.actor_bc_coef))
    return off_policy.build(config, num_updates, rules, offline=shared_fields.learns_from_dataset(config))


registry.register(
    "rebrac",
    defaults=defaults,
    build=build,
    validate=validate,
    config_defaults={**shared_fields.OFFLINE_CONFIG_DEFAULTS, "network.layer_norm": True},
    offline=True,
    online=True,
)
