"""MPO: maximum a posteriori policy optimisation from replay (Abdolmaleki et al. 2018), either kind of action.

One `agent.name`, chosen by the environment's action spec: discrete actions
take `discrete_mpo` (a categorical policy, the E-step exact over the actions);
continuous actions take what follows.

A Gaussian actor (`continuous_networks.GaussianActor`, unsquashed; its samples
are clipped to [-1, 1]^D where they meet a critic or the environment), twin
critics from the device replay buffer (`off_policy`, which holds the critics'
loss, the targets' Polyak averaging and the replay loop MPO shares with SAC
and TD3). Per gradient step, with N = `agent.num_samples` actions
a_j ~ pi_target(.|s) drawn per sampled state:

- critics towards y = r + gamma d (1/N) sum_j min_i Q'_i(s', a'_j), a'_j ~ pi_target(.|s')
  (the expected value of the target policy, Abdolmaleki et al. 2018, Section 4);
- E-step (eqs. 7-9, `em_losses.sampled_e_step`): weights q_j proportional to
  exp(min_i Q'_i(s, a_j) / eta), and the temperature's dual
  g(eta) = eta epsilon + eta E_s log (1/N) sum_j exp(Q / eta), `agent.epsilon`;
- M-step (eqs. 10-11), the decoupled Gaussian update of Abdolmaleki et al. 2018b
  ("Relative Entropy Regularized Policy Iteration", Section 4.2): the mean and
  the deviation are fitted separately by weighted maximum likelihood,
  -E_s sum_j q_j [log N(a_j; mu, sigma_target) + log N(a_j; mu_target, sigma)],
  each under its own trust region, KL_mu <= `agent.epsilon_mean` and
  KL_sigma <= `agent.epsilon_stddev` from the target policy, with multipliers
  alpha_mu and alpha_sigma minimising alpha (epsilon - sg KL) while the actor
  minimises sg(alpha) KL (`em_losses.kl_constraint`);
- targets: actor and critics, theta' <- tau theta + (1 - tau) theta' (`agent.target_tau`).

eta, alpha_mu and alpha_sigma are softplus'd parameters (`em_losses.dual_value`)
with their own Adam (`agent.dual_learning_rate`, unclipped). `act` samples the
online Gaussian, clipped; `greedy_act` takes its clipped mean.
"""

import dataclasses
import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax
from dm_env import specs
from flax import struct
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import off_policy, shared_fields
from podracer.agents.learning.optimizer import flat_vector
from podracer.agents.models import continuous_networks as cn
from podracer.agents.models import policy
from podracer.agents.policy_optimisation import discrete_mpo, em_losses
from podracer.config import field_checks
from podracer.devices import collectives

OWN_DEFAULTS = {
    "num_samples": 20,  # N: actions sampled from the target policy per state.
    "epsilon": 0.1,  # The E-step's bound on KL(q || pi_target).
    "epsilon_mean": 2.5e-3,  # The M-step's bound on the KL of the Gaussian's mean (of a categorical: its KL).
    "epsilon_stddev": 1e-6,  # The M-step's bound on the KL of the Gaussian's deviation.
    "initial_temperature": 1.0,  # eta before learning.
    "initial_alpha_mean": 1.0,  # alpha_mu before learning.
    "initial_alpha": 1.0,  # A categorical policy's alpha before learning.
    "initial_alpha_stddev": 10.0,  # alpha_sigma before learning.
    "dual_learning_rate": 1e-2,  # Adam's rate for eta and the alphas.
}


def defaults() -> ConfigDict:
    return off_policy.defaults(**OWN_DEFAULTS)


def validate(config: ConfigDict) -> None:
    off_policy.validate(config)
    field_checks.integer(config, "agent.num_samples", at_least=1, example=20)
    for field, example in OWN_DEFAULTS.items():
        if field != "num_samples":
            field_checks.number(config, f"agent.{field}", example=example, above=0.0)


@struct.dataclass
class MPOOwn:
    """What MPO learns beside the actor and critics (`off_policy.OffPolicyState.own`)."""

    target_actor: Any  # The target actor's variables.
    duals: dict  # The parameters of eta, alpha_mean and alpha_stddev (`em_losses.dual_value`).
    dual_opt_state: Any


@dataclasses.dataclass(frozen=True)
class StepSettings:
    """What MPO's improvement step reads of `config.agent` (each field is described in `OWN_DEFAULTS`)."""

    num_samples: int
    epsilon: float
    epsilon_mean: float
    epsilon_stddev: float


def sample_actions(outputs: dict, key: chex.PRNGKey, num_samples: int) -> chex.Array:
    """N actions per state from the Gaussian `outputs` `[S, D]`, unclipped: `[N, S, D]`."""
    noise = jax.random.normal(key, (num_samples, *outputs["mean"].shape))
    return outputs["mean"] + jnp.exp(outputs["log_std"]) * noise


def sampled_q(critic: cn.Model, observation: Any, actions: chex.Array) -> chex.Array:
    """min_i Q_i(s, clip(a_j, -1, 1)) `[N, S]` of N actions per state `[N, S, D]`."""
    return jax.vmap(lambda a: off_policy.min_q(critic, observation, jnp.clip(a, -1.0, 1.0)))(actions)


def next_value(state: off_policy.OffPolicyState, batch: off_policy.Batch, key: chex.PRNGKey, num_samples: int):
    """v(s') `[S]`: the mean of min_i Q'_i(s', a'_j) over N actions of the target policy."""
    target_actor = state.actor.params.replace(variables=state.own.target_actor)
    actions = sample_actions(target_actor(batch.next_observation), key, num_samples)
    return jnp.mean(sampled_q(state.target_critic, batch.next_observation, actions), axis=0)


def policy_loss(
    trainable: tuple[cn.Model, dict],
    batch: off_policy.Batch,
    old: dict,
    actions: chex.Array,
    q_values: chex.Array,
    settings: StepSettings,
) -> tuple[chex.Array, dict]:
    """The E-step's temperature dual and the decoupled M-step with its trust regions, of `(actor, duals)`."""
    actor, duals = trainable
    valid = batch.valid
    temperature = em_losses.dual_value(duals["temperature"])
    weights, temperature_loss, metrics = em_losses.sampled_e_step(q_values, temperature, settings.epsilon, valid)
    online = actor(batch.observation)
    mean_only, stddev_only = em_losses.decoupled(old, online)
    fits = {
        name: policy.log_prob(gaussian, actions) for name, gaussian in (("mean", mean_only), ("stddev", stddev_only))
    }
    kls = {"mean": em_losses.gaussian_kl_mean(old, online), "stddev": em_losses.gaussian_kl_stddev(old, online)}
    total = temperature_loss
    for part, epsilon in (("mean", settings.epsilon_mean), ("stddev", settings.epsilon_stddev)):
        alpha, kl = em_losses.dual_value(duals[f"alpha_{part}"]), em_losses.masked_mean(kls[part], valid)
        penalty, alpha_loss = em_losses.kl_constraint(kl, alpha, epsilon)
        fit = -em_losses.masked_mean(jnp.sum(weights * fits[part], axis=0), valid)
        total = total + fit + penalty + alpha_loss
        metrics = {**metrics, f"alpha_{part}": alpha, f"kl_{part}": kl}
    return total, {**metrics, "actor_loss": total}


def make_rules(config: ConfigDict, num_updates: int) -> off_policy.Rules:
    """MPO's part of the agent (`off_policy.Rules`): its Gaussian actor, target actor, E-step and M-step."""
    agent_config = config.agent
    settings = StepSettings(
        agent_config.num_samples, agent_config.epsilon, agent_config.epsilon_mean, agent_config.epsilon_stddev
    )
    optimizer = off_policy.make_off_policy_optimizer(config, num_updates)
    dual_optimizer = optax.adam(agent_config.dual_learning_rate)

    def make_actor(size: int, low: tuple, high: tuple) -> cn.GaussianActor:
        return cn.GaussianActor(size, low, high, **cn.network_fields(config.network))

    def init_own(actor: cn.Model) -> MPOOwn:
        duals = {
            name: em_losses.dual_param(agent_config[f"initial_{name}"])
            for name in ("temperature", "alpha_mean", "alpha_stddev")
        }
        return MPOOwn(actor.variables, duals, dual_optimizer.init(duals))

    def improve(state: off_policy.OffPolicyState, batch: off_policy.Batch, key: chex.PRNGKey, axis_name):
        own = state.own
        old = jax.lax.stop_gradient(state.actor.params.replace(variables=own.target_actor)(batch.observation))
        actions = sample_actions(old, key, settings.num_samples)
        q_values = sampled_q(state.target_critic, batch.observation, actions)

        def objective(trainable: tuple, batch: off_policy.Batch) -> tuple[chex.Array, dict]:
            return policy_loss(trainable, batch, old, actions, q_values, settings)

        (grads, dual_grads), metrics = collectives.mean_grad(objective, axis_name)(
            (state.actor.params, own.duals), batch
        )
        updates, opt_state = optimizer.update(grads, state.actor.opt_state, state.actor.params)
        actor = state.actor.replace(params=optax.apply_updates(state.actor.params, updates), opt_state=opt_state)
        dual_updates, dual_opt_state = dual_optimizer.update(dual_grads, own.dual_opt_state, own.duals)
        tau = agent_config.target_tau
        own = MPOOwn(
            off_policy.polyak(actor.params.variables, own.target_actor, tau),
            optax.apply_updates(own.duals, dual_updates),
            dual_opt_state,
        )
        target_critic = off_policy.polyak(state.critic.params, state.target_critic, tau)
        state = state.replace(actor=actor, own=own, target_critic=target_critic)
        return state, {**metrics, "actor_grad_norm": optax.tree.norm(flat_vector(grads))}

    def value(state: off_policy.OffPolicyState, batch: off_policy.Batch, key: chex.PRNGKey) -> chex.Array:
        return next_value(state, batch, key, settings.num_samples)

    return off_policy.Rules(make_actor, init_own, value, improve, act, greedy_act)


def act(params: cn.Model, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """A Gaussian sample per environment clipped to [-1, 1]^D, on the action bounds; the extras are its outputs."""
    outputs = params(observation)
    action = outputs["mean"] + jnp.exp(outputs["log_std"]) * off_policy.per_environment_normal(key, outputs["mean"])
    return cn.to_bounds(jnp.clip(action, -1.0, 1.0), params.module), outputs


def greedy_act(params: cn.Model, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """The Gaussian's mean clipped to [-1, 1]^D, on the action bounds."""
    del key
    outputs = params(observation)
    return cn.to_bounds(jnp.clip(outputs["mean"], -1.0, 1.0), params.module), outputs


def build(config: ConfigDict, num_updates: int) -> Agent:
    """Both agents; `init` makes the one the action spec asks for, and the rest follow the state (or the acting
    parameters) they are given."""
    continuous = off_policy.build(config, num_updates, make_rules(config, num_updates))
    discrete = discrete_mpo.build(config, num_updates)

    def chosen(state: Any) -> Agent:
        return discrete if isinstance(state, discrete_mpo.DiscreteMPOState) else continuous

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> Any:
        agent = discrete if isinstance(action_spec, specs.DiscreteArray) else continuous
        return agent.init(key, observation_spec, action_spec)

    def acting(params: Any, observation: Any, key: chex.PRNGKey, greedy: bool = False) -> tuple[chex.Array, dict]:
        agent = continuous if isinstance(params, cn.Model) else discrete
        return (agent.greedy_act if greedy else agent.act)(params, observation, key)

    return Agent(
        init=init,
        act=acting,
        learn=lambda state, *args: chosen(state).learn(state, *args),
        acting_params=lambda state: chosen(state).acting_params(state),
        greedy_act=functools.partial(acting, greedy=True),
        remember=lambda state, trajectory: chosen(state).remember(state, trajectory),
    )


registry.register(
    "mpo",
    defaults=defaults,
    build=build,
    validate=validate,
    config_defaults=shared_fields.REPLAY_CONFIG_DEFAULTS,
)
