"""Conservative Q-Learning (Kumar et al. 2020, "Conservative Q-Learning for Offline Reinforcement Learning").

CQL(H) (eq. 4) adds to the critics' regression a term that pushes down the
soft maximum of Q over actions while pushing up Q at the dataset's action,
weighted by alpha `agent.alpha`, so that actions the dataset does not hold
are not overvalued. One `agent.name`, either kind of action, chosen by the
environment's action spec:

- **Discrete actions** (MinAtar, Atari, grids): a Q-network (the one
  `config.network` describes, convolutional torsos for frames) learns by
  DQN's regression, double Q with a target network,
    L = 1/2 E_D[(Q(s, a) - y)^2] + alpha E_D[log sum_a' exp Q(s, a') - Q(s, a)],
    y = r + gamma d Q'(s', argmax_a' Q(s', a')),
  the target moved `agent.target_tau` of the way every
  `agent.target_update_period` gradient steps. It acts greedily. Nothing is
  drawn, so an update is the same on any number of devices.
- **Continuous actions**: SAC (`podracer.agents.algorithms.sac`: its squashed
  Gaussian actor, soft targets and temperature) with the regulariser on each
  critic, the log-sum-exp over actions estimated by importance sampling from
  `agent.num_sampled_actions` uniform actions, and as many from the policy at
  s and at s' (the authors' CQL(H) estimator, Appendix F):
    alpha sum_i E_D[log (sum_{a~U} exp(Q_i(s, a)) / U(a) + sum_{a~pi(s), pi(s')} exp(Q_i(s, a)) / pi(a)) - Q_i(s, a_D)].
"""

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from dm_env import specs
from flax import struct
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import dqn, off_policy, sac, shared_fields
from podracer.agents.learning.optimizer import make_optimizer, mean_gradient
from podracer.agents.models import continuous_networks as cn
from podracer.agents.models import networks
from podracer.agents.trajectory import Trajectory
from podracer.config import field_checks


def defaults() -> ConfigDict:
    return off_policy.defaults(
        offline=True,
        alpha=5.0,  # The weight of the conservative regulariser.
        double_q=True,  # Discrete: the online network picks the bootstrap action, the target network values it.
        target_update_period=1,  # Discrete: gradient steps between target updates.
        num_sampled_actions=10,  # Continuous: actions of each kind the log-sum-exp is estimated from.
        **sac.OWN_DEFAULTS,  # Continuous: SAC's temperature.
    )


def validate(config: ConfigDict) -> None:
    field_checks.fraction(config, "agent.gamma", example=0.99)
    field_checks.number(config, "agent.target_tau", example=0.005, above=0.0, at_most=1.0)
    field_checks.number(config, "agent.reward_clip", example=1.0, at_least=0.0)
    field_checks.integer(config, "agent.batch_size", at_least=1, example=256)
    field_checks.number(config, "agent.alpha", example=5.0, at_least=0.0)
    field_checks.boolean(config, "agent.double_q")
    field_checks.integer(config, "agent.target_update_period", at_least=1, example=1_000)
    field_checks.integer(config, "agent.num_sampled_actions", at_least=1, example=10)
    sac.validate_own_fields(config)
    shared_fields.require_feed_forward(config, "CQL learns a feed-forward Q-network from single transitions")


def check_environment(config: ConfigDict, env: Any) -> None:
    """Continuous actions take SAC's networks, which read vectors through an MLP (`off_policy.validate`)."""
    if not isinstance(env.action_spec(), specs.DiscreteArray):
        off_policy.validate(config, offline=True)


@struct.dataclass
class DiscreteState:
    params: networks.NetworkParams
    target_params: networks.NetworkParams
    opt_state: Any
    gradient_steps: chex.Array  # int32: the target update's clock.


def discrete_loss(
    params: networks.NetworkParams,
    batch: Trajectory,
    target_params: networks.NetworkParams,
    alpha: float,
    gamma: float,
    double_q: bool,
    reward_clip: float,
) -> tuple[chex.Array, dict]:
    """CQL(H)'s loss on transitions `[2, S]`: the squared TD error's half plus alpha times the regulariser."""
    q_values = networks.unroll_trajectory(networks.unroll, params, batch)  # [2, S, A]
    q_target = networks.unroll_trajectory(networks.unroll, target_params, batch)
    targets = dqn.sequence_targets(batch, jax.lax.stop_gradient(q_values), q_target, gamma, double_q, reward_clip, 1)
    chosen = jnp.take_along_axis(q_values[0], batch.action[0][:, None], axis=-1)[:, 0]
    td_loss = jnp.mean(0.5 * (jax.lax.stop_gradient(targets[0]) - chosen) ** 2)
    regulariser = jnp.mean(jax.nn.logsumexp(q_values[0], axis=-1) - chosen)
    total = td_loss + alpha * regulariser
    return total, {"loss": total, "td_loss": td_loss, "cql_regulariser": regulariser, "q_mean": jnp.mean(chosen)}


def continuous_regulariser(
    critic: cn.Model, batch: off_policy.Batch, actor: cn.Model, key: chex.PRNGKey, samples: int
) -> chex.Array:
    """sum_i E_D[log-sum-exp of Q_i(s, .) by importance sampling - Q_i(s, a_D)] (Appendix F), `[]`.

    `samples` uniform actions in [-1, 1]^D (density 2^-D) and as many drawn from the policy at s and at s'
    (its densities held constant), each Q_i(s, a) less its action's log-density."""
    size, dims = batch.action.shape
    uniform_key, now_key, next_key = jax.random.split(key, 3)
    uniform = jax.random.uniform(uniform_key, (samples, size, dims), minval=-1.0, maxval=1.0)

    def from_policy(observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, chex.Array]:
        outputs = actor(observation)
        noise = jax.random.normal(key, (samples, size, dims))
        actions, log_probs = jax.vmap(lambda n: cn.squashed_sample(outputs, n))(noise)
        return jax.lax.stop_gradient(actions), jax.lax.stop_gradient(log_probs)

    (now, log_now), (after, log_after) = (
        from_policy(batch.observation, now_key),
        from_policy(batch.next_observation, next_key),
    )
    q = jax.vmap(lambda actions: critic(batch.observation, actions))  # [N, S, D] -> [N, S, 2]
    weighted = jnp.concatenate(
        [q(uniform) - dims * np.log(0.5), q(now) - log_now[..., None], q(after) - log_after[..., None]]
    )
    gap = jax.nn.logsumexp(weighted, axis=0) - critic(batch.observation, batch.action)  # [S, 2]
    return off_policy.masked_mean(jnp.sum(gap, axis=-1), batch.valid)


def greedy_act(params: Any, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """The most valued action (illegal ones masked out by the network), or SAC's tanh(mean)."""
    if isinstance(params, cn.Model):
        return sac.greedy_act(params, observation, key)
    _, q_values = params.step((), observation)
    return jnp.argmax(q_values, axis=-1).astype(jnp.int32), {}


def act(params: Any, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """Greedy for discrete actions; SAC's squashed sample for continuous ones."""
    return (sac.act if isinstance(params, cn.Model) else greedy_act)(params, observation, key)


def build_discrete(config: ConfigDict, num_updates: int) -> Agent:
    agent_config, network = config.agent, shared_fields.network_settings(config)
    optimizer = make_optimizer(shared_fields.optimizer_settings(config), gradient_steps=num_updates)
    hyperparameters = {field: agent_config[field] for field in ("alpha", "gamma", "double_q", "reward_clip")}

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> DiscreteState:
        params = networks.init_module(
            key, networks.make_q_network(network, observation_spec, action_spec), observation_spec
        )
        return DiscreteState(params, params, optimizer.init(params), jnp.int32(0))

    def learn(state: DiscreteState, batch: Trajectory, key: chex.PRNGKey, axis_name=None):
        def batch_loss(params: networks.NetworkParams, batch: Trajectory) -> tuple[chex.Array, dict]:
            return discrete_loss(params, batch, state.target_params, **hyperparameters)

        grads, metrics = mean_gradient(batch_loss, state.params, batch, axis_name)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params, steps = optax.apply_updates(state.params, updates), state.gradient_steps + 1
        moved = optax.incremental_update(params, state.target_params, agent_config.target_tau)
        target = optax.periodic_update(moved, state.target_params, steps, agent_config.target_update_period)
        return DiscreteState(params, target, opt_state, steps), {**metrics, "grad_norm": optax.tree.norm(grads)}

    return Agent(init=init, act=act, learn=learn, acting_params=lambda state: state.params, greedy_act=greedy_act)


def build_continuous(config: ConfigDict, num_updates: int) -> Agent:
    agent_config = config.agent

    def penalty(state: off_policy.OffPolicyState, critic: cn.Model, batch: off_policy.Batch, key: chex.PRNGKey):
        gap = continuous_regulariser(critic, batch, state.actor.params, key, agent_config.num_sampled_actions)
        return agent_config.alpha * gap, {"cql_regulariser": gap}

    rules = sac.make_rules(config, num_updates)
    return off_policy.build(config, num_updates, dataclasses.replace(rules, critic_penalty=penalty), offline=True)


def build(config: ConfigDict, num_updates: int) -> Agent:
    """Both agents; `init` makes the one the action spec asks for, and the rest follow the state they are given."""
    discrete, continuous = build_discrete(config, num_updates), build_continuous(config, num_updates)

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> Any:
        chosen = discrete if isinstance(action_spec, specs.DiscreteArray) else continuous
        return chosen.init(key, observation_spec, action_spec)

    def learn(state: Any, batch: Trajectory, key: chex.PRNGKey, axis_name=None) -> tuple[Any, dict]:
        return (discrete if isinstance(state, DiscreteState) else continuous).learn(state, batch, key, axis_name)

    def acting_params(state: Any) -> Any:
        return (discrete if isinstance(state, DiscreteState) else continuous).acting_params(state)

    return Agent(init=init, act=act, learn=learn, acting_params=acting_params, greedy_act=greedy_act)


registry.register(
    "cql",
    defaults=defaults,
    build=build,
    validate=validate,
    check_environment=check_environment,
    config_defaults=shared_fields.OFFLINE_CONFIG_DEFAULTS,
    offline=True,
    online=False,
)
