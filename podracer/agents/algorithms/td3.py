"""Twin Delayed DDPG (Fujimoto et al. 2018, "Addressing Function Approximation Error in Actor-Critic Methods").

A deterministic actor mu(s) in [-1, 1]^D (a tanh output) and twin critics from
replay (`off_policy`, which holds the critics' loss and the replay loop TD3
shares with SAC). Per gradient step (Algorithm 1):

- critics towards the clipped double-Q target with target policy smoothing
  (Section 5.3, eq. 14):
    y = r + gamma d min_i Q'_i(s', a'),  a' = clip(mu'(s') + clip(eps, -c, c), -1, 1),  eps ~ N(0, sigma~^2),
  mu' and Q' the targets, sigma~ `agent.target_noise` and c `agent.target_noise_clip`;
- every `agent.policy_delay` steps (Section 5.2) the actor follows the
  deterministic policy gradient of Q_1 (J = -E[Q_1(s, mu(s))]), and the
  targets move: theta' <- tau theta + (1 - tau) theta' (`agent.target_tau`).

`act` explores with Gaussian noise, clip(mu(s) + N(0, sigma^2), -1, 1) with
sigma `agent.exploration_noise` (all in [-1, 1]^D, then mapped onto the
action bounds); `greedy_act` is mu(s). Neither has extras.
"""

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import off_policy, shared_fields
from podracer.agents.learning.optimizer import sgd_step
from podracer.agents.models import continuous_networks as cn
from podracer.config import field_checks

OWN_DEFAULTS = {
    "policy_delay": 2,  # Critic steps per actor and target step.
    "exploration_noise": 0.1,  # sigma of the acting noise.
    "target_noise": 0.2,  # sigma~ of the target policy smoothing noise.
    "target_noise_clip": 0.5,  # c: the smoothing noise is clipped to [-c, c].
}
"""TD3's own fields of `config.agent`, which TD3+BC and ReBRAC keep."""


def defaults() -> ConfigDict:
    return off_policy.defaults(**OWN_DEFAULTS)


def validate(config: ConfigDict) -> None:
    off_policy.validate(config)
    validate_own_fields(config)


def validate_own_fields(config: ConfigDict) -> None:
    """TD3's own fields (beside the off-policy agents' shared ones), which TD3+BC and ReBRAC keep."""
    field_checks.integer(config, "agent.policy_delay", at_least=1, example=2)
    for field, example in (("exploration_noise", 0.1), ("target_noise", 0.2), ("target_noise_clip", 0.5)):
        field_checks.number(config, f"agent.{field}", example=example, at_least=0.0)


def smoothed_target_action(mu: chex.Array, noise: chex.Array, target_noise: float, noise_clip: float) -> chex.Array:
    """a' = clip(mu'(s') + clip(sigma~ noise, -c, c), -1, 1) for standard normal `noise` (eq. 14)."""
    chex.assert_equal_shape([mu, noise])
    return jnp.clip(mu + jnp.clip(target_noise * noise, -noise_clip, noise_clip), -1.0, 1.0)


def next_value(
    state: off_policy.OffPolicyState,
    batch: off_policy.Batch,
    key: chex.PRNGKey,
    target_noise: float,
    noise_clip: float,
    cloning_penalty: float = 0.0,
) -> chex.Array:
    """min_i Q'_i(s', a') `[S]` of the smoothed target action a' (eq. 14); with `cloning_penalty` beta_2 > 0, less
    beta_2 |a' - a'_D|^2, a'_D the dataset's next action (ReBRAC's critic penalty, Tarasov et al. 2023, eq. 3)."""
    observation = batch.next_observation
    mu = state.actor.params.replace(variables=state.own)(observation)  # The target actor.
    action = smoothed_target_action(mu, jax.random.normal(key, mu.shape), target_noise, noise_clip)
    value = off_policy.min_q(state.target_critic, observation, action)
    if cloning_penalty:
        value = value - cloning_penalty * jnp.sum((action - batch.next_action) ** 2, axis=-1)
    return value


ActorLoss = Callable[[cn.Model, off_policy.Batch, cn.Model, str | None], tuple[chex.Array, dict]]
"""`(actor, batch, critic, axis_name) -> (loss, metrics)`: what the actor minimises (TD3's, or TD3+BC's)."""


def actor_loss(
    actor: cn.Model, batch: off_policy.Batch, critic: cn.Model, axis_name: str | None = None
) -> tuple[chex.Array, dict]:
    """J = -E[Q_1(s, mu(s))]: the deterministic policy gradient through the first critic (Algorithm 1)."""
    del axis_name  # A mean over this device's batch: the gradients are averaged.
    q_first = critic(batch.observation, actor(batch.observation))[..., 0]
    loss = -off_policy.masked_mean(q_first, batch.valid)
    return loss, {"actor_loss": loss}


def make_act(exploration_noise: float) -> Callable[[cn.Model, Any, chex.PRNGKey], tuple[chex.Array, dict]]:
    """TD3's `act`, exploring with Gaussian noise of standard deviation `exploration_noise`."""

    def act(params: cn.Model, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
        """clip(mu(s) + N(0, sigma^2), -1, 1) per environment, on the action bounds."""
        mu = params(observation)
        noise = exploration_noise * off_policy.per_environment_normal(key, mu)
        return cn.to_bounds(jnp.clip(mu + noise, -1.0, 1.0), params.module), {}

    return act


def greedy_act(params: cn.Model, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """mu(s), on the action bounds."""
    del key
    return cn.to_bounds(params(observation), params.module), {}


def build(config: ConfigDict, num_updates: int) -> Agent:
    return off_policy.build(config, num_updates, make_rules(config, num_updates))


def make_rules(config: ConfigDict, num_updates: int, minimised: ActorLoss = actor_loss) -> off_policy.Rules:
    """TD3's part of the agent (`off_policy.Rules`), its actor minimising `minimised`."""
    agent_config, network = config.agent, config.network
    optimizer = off_policy.make_off_policy_optimizer(config, num_updates)
    tau = agent_config.target_tau

    def make_actor(size: int, low: tuple, high: tuple) -> cn.DeterministicActor:
        return cn.DeterministicActor(size, low, high, **cn.network_fields(network))

    def value(state: off_policy.OffPolicyState, batch: off_policy.Batch, key: chex.PRNGKey) -> chex.Array:
        smoothing = (agent_config.target_noise, agent_config.target_noise_clip)
        return next_value(state, batch, key, *smoothing, agent_config.get("critic_bc_coef", 0.0))

    def improve(state: off_policy.OffPolicyState, batch: off_policy.Batch, key: chex.PRNGKey, axis_name):
        del key  # The deterministic policy gradient draws nothing.

        def update(state: off_policy.OffPolicyState) -> tuple[off_policy.OffPolicyState, dict]:
            def loss(actor: cn.Model, batch: off_policy.Batch) -> tuple[chex.Array, dict]:
                return minimised(actor, batch, state.critic.params, axis_name)

            actor, metrics = sgd_step(state.actor, batch, loss, optimizer, axis_name)
            state = state.replace(
                actor=actor,
                own=off_policy.polyak(actor.params.variables, state.own, tau),
                target_critic=off_policy.polyak(state.critic.params, state.target_critic, tau),
            )
            return state, {"actor_grad_norm": metrics.pop("grad_norm"), **metrics}

        def wait(state: off_policy.OffPolicyState) -> tuple[off_policy.OffPolicyState, dict]:
            shapes = jax.eval_shape(update, state)[1]
            return state, jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

        return jax.lax.cond(state.gradient_steps % agent_config.policy_delay == 0, update, wait, state)

    return off_policy.Rules(
        make_actor,
        lambda actor: actor.variables,  # The target actor's variables.
        value,
        improve,
        make_act(agent_config.exploration_noise),
        greedy_act,
    )


registry.register(
    "td3",
    defaults=defaults,
    build=build,
    validate=validate,
    config_defaults=shared_fields.REPLAY_CONFIG_DEFAULTS,
)
