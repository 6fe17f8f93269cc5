"""V-MPO: on-policy maximum a posteriori policy optimisation (Song et al. 2020, ICLR), discrete and continuous.

Each `learn` call is one gradient step on the whole trajectory of the loss
(Song et al. 2020, eq. 1)

    L = L_V + L_pi + L_eta + L_alpha

- L_V = value_cost E[1/2 (V(s_t) - G_t)^2] (eq. 6), G_t the V-trace target vs_t
  (Espeholt et al. 2018, eq. 1, lambda = 1, `returns.vtrace`), which on-policy is
  the paper's n-step return bootstrapped from the trajectory's last state and, with
  Sebulba's IMPALA-style actors acting on older parameters, corrects for their lag;
- advantages A = G_t - V(s_t), held constant;
- L_pi = -sum_{D~} psi(s, a) log pi(a|s) (eq. 3), psi the softmax of A / eta over
  D~, the top half of the batch's advantages (eq. 4, `em_losses.top_half_e_step`,
  selected over every device's shard together);
- L_eta = eta epsilon_eta + eta log[(1/|D~|) sum_{D~} exp(A / eta)] (eq. 5);
- L_alpha = alpha (epsilon_alpha - sg KL(pi_old || pi)) + sg(alpha) KL(pi_old || pi)
  (eq. 5), pi_old the target network. A Gaussian policy has two multipliers,
  one on the KL of its mean and one on the KL of its standard deviation, with
  their own epsilons (Appendix C, eqs. 25-26, `em_losses.gaussian_kl_mean`).

eta and alpha are softplus'd parameters (`em_losses.dual_value`), learned by
their own Adam (`agent.dual_learning_rate`, unclipped) beside the network's
optimiser. The target network pi_old is the online network copied every
`agent.target_update_period` `learn` calls (T_target in Song et al. 2020,
Section 4.1). The network is `networks.ActorCritic` (a categorical or Gaussian
head, a value head, any `network.core`); `act` samples the online policy and
keeps its outputs as the behaviour policy (`network_agent`).
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import network_agent, shared_fields
from podracer.agents.learning.optimizer import flat_vector, make_optimizer
from podracer.agents.learning.returns import vtrace
from podracer.agents.models import networks, policy
from podracer.agents.policy_optimisation import em_losses
from podracer.agents.trajectory import Trajectory, transitions
from podracer.config import field_checks
from podracer.devices import collectives


def defaults() -> ConfigDict:
    return ConfigDict(
        {
            "gamma": 0.99,
            "value_cost": 0.5,  # The weight of L_V.
            "reward_clip": 0.0,
            "epsilon_temperature": 0.01,  # epsilon_eta: the KL of the E-step's weights from pi_old.
            "epsilon_alpha": 0.005,  # epsilon_alpha: the KL bound of a categorical policy's M-step.
            "epsilon_alpha_mean": 0.01,  # epsilon_alpha_mu: a Gaussian's bound on the KL of its mean.
            "epsilon_alpha_stddev": 5e-5,  # epsilon_alpha_Sigma: a Gaussian's bound on the KL of its deviation.
            "initial_temperature": 1.0,  # eta before learning (Song et al. 2020, Table 4).
            "initial_alpha": 5.0,  # Each alpha before learning (Song et al. 2020, Table 4).
            "dual_learning_rate": 1e-2,  # Adam's rate for eta and the alphas.
            "target_update_period": 10,  # T_target: `learn` calls between copies of the target network.
            **network_agent.NORMALIZATION_DEFAULTS,
        }
    )


EPSILONS = ("epsilon_temperature", "epsilon_alpha", "epsilon_alpha_mean", "epsilon_alpha_stddev")


def validate(config: ConfigDict) -> None:
    field_checks.fraction(config, "agent.gamma", example=0.99)
    field_checks.number(config, "agent.value_cost", example=0.5, at_least=0.0)
    field_checks.number(config, "agent.reward_clip", example=1.0, at_least=0.0)
    for field in EPSILONS:
        field_checks.number(config, f"agent.{field}", example=defaults()[field], above=0.0)
    for field in ("initial_temperature", "initial_alpha", "dual_learning_rate"):
        field_checks.number(config, f"agent.{field}", example=defaults()[field], above=0.0)
    field_checks.integer(config, "agent.target_update_period", at_least=1, example=10)
    for field in network_agent.NORMALIZATION_DEFAULTS:
        field_checks.boolean(config, f"agent.{field}")


@struct.dataclass
class VMPOState:
    """`LearnerState`'s fields (the network, its optimiser state and statistics), and what V-MPO adds."""

    params: networks.NetworkParams
    opt_state: Any
    normalizers: network_agent.Normalizers
    target_params: networks.NetworkParams  # pi_old.
    duals: dict  # The parameters of eta and the alphas (`em_losses.dual_value`).
    dual_opt_state: Any
    learn_calls: chex.Array  # int32: the target update's clock.


@dataclasses.dataclass(frozen=True)
class LossSettings:
    """What V-MPO's loss reads of `config.agent` (each field is described in `defaults`)."""

    gamma: float
    value_cost: float
    reward_clip: float
    epsilon_temperature: float
    epsilon_alpha: float
    epsilon_alpha_mean: float
    epsilon_alpha_stddev: float

    @classmethod
    def of(cls, agent_config: ConfigDict) -> "LossSettings":
        return cls(**{field.name: agent_config[field.name] for field in dataclasses.fields(cls)})


def initial_duals(agent_config: ConfigDict, gaussian: bool) -> dict:
    """The dual parameters at their initial values: eta's, and one alpha (categorical) or two (Gaussian)."""
    alphas = ("alpha_mean", "alpha_stddev") if gaussian else ("alpha",)
    duals = {"temperature": em_losses.dual_param(agent_config.initial_temperature)}
    return {**duals, **{name: em_losses.dual_param(agent_config.initial_alpha) for name in alphas}}


def trust_region(old: dict, new: dict, duals: dict, valid: chex.Array, settings: LossSettings) -> tuple[Any, dict]:
    """`(penalties + multiplier losses, metrics)` of the M-step's KL(pi_old || pi) bounds: one bound for a
    categorical, two for a Gaussian's mean and deviation (eqs. 5, 25-26). Each KL is averaged over every entry,
    0 where `valid` is (as the value loss): a mean over equal shards that averaging over devices keeps exact."""
    if policy.is_gaussian(new):
        kls = {
            "alpha_mean": (em_losses.gaussian_kl_mean(old, new), settings.epsilon_alpha_mean),
            "alpha_stddev": (em_losses.gaussian_kl_stddev(old, new), settings.epsilon_alpha_stddev),
        }
    else:
        kls = {"alpha": (em_losses.categorical_kl(old["logits"], new["logits"]), settings.epsilon_alpha)}
    total, metrics = 0.0, {}
    for name, (kl, epsilon) in kls.items():
        alpha, kl = em_losses.dual_value(duals[name]), jnp.mean(valid * kl)
        penalty, alpha_loss = em_losses.kl_constraint(kl, alpha, epsilon)
        total = total + penalty + alpha_loss
        metrics = {**metrics, name: alpha, f"{name}_kl": kl}
    return total, metrics


def loss(
    trainable: tuple[networks.NetworkParams, dict],
    trajectory: Trajectory,
    target_params: networks.NetworkParams,
    settings: LossSettings,
    axis_name: collectives.AxisName = None,
    unroll_fn: Callable = networks.unroll,
) -> tuple[chex.Array, dict]:
    """L = L_V + L_pi + L_eta + L_alpha (eq. 1) of `trainable` (the network, the duals) on this device's shard;
    `unroll_fn` runs the network (`networks.unroll`, or a test's own)."""
    params, duals = trainable
    outputs, values = networks.unroll_trajectory(unroll_fn, params, trajectory)
    old_outputs, _ = networks.unroll_trajectory(unroll_fn, target_params, trajectory)
    outputs, old_outputs = jax.tree.map(lambda x: x[:-1], (outputs, jax.lax.stop_gradient(old_outputs)))
    tr = transitions(trajectory, settings.gamma, settings.reward_clip)
    log_probs = policy.log_prob(outputs, trajectory.action)
    log_rhos = jax.lax.stop_gradient(log_probs - policy.log_prob(trajectory.extras, trajectory.action))
    targets = vtrace(tr.rewards, tr.discounts, jax.lax.stop_gradient(values), log_rhos, tr.lambdas(1.0)).vs
    advantages = jax.lax.stop_gradient(targets - values[:-1])
    temperature = em_losses.dual_value(duals["temperature"])
    weights, temperature_loss, metrics = em_losses.top_half_e_step(
        advantages, tr.valid, temperature, settings.epsilon_temperature, axis_name
    )
    devices = collectives.total(jnp.float32(1.0), axis_name)  # The weights sum to 1 over all devices' samples.
    policy_loss = -devices * jnp.sum(weights * log_probs)
    value_loss = jnp.mean(tr.valid * 0.5 * (jax.lax.stop_gradient(targets) - values[:-1]) ** 2)
    kl_terms, kl_metrics = trust_region(old_outputs, outputs, duals, tr.valid, settings)
    total = policy_loss + temperature_loss + kl_terms + settings.value_cost * value_loss
    metrics = {**metrics, **kl_metrics, "policy_loss": policy_loss, "value_loss": value_loss, "loss": total}
    return total, {**metrics, "advantage_mean": jnp.mean(tr.valid * advantages)}


def build(config: ConfigDict, num_updates: int) -> Agent:
    agent_config = config.agent
    settings = LossSettings.of(agent_config)
    optimizer = make_optimizer(shared_fields.optimizer_settings(config), gradient_steps=num_updates)
    dual_optimizer = optax.adam(agent_config.dual_learning_rate)

    def learn(state: VMPOState, trajectory: Trajectory, key: chex.PRNGKey, axis_name=None) -> tuple[VMPOState, dict]:
        del key  # One gradient step on the whole trajectory draws nothing at random.

        def objective(trainable: tuple, trajectory: Trajectory) -> tuple[chex.Array, dict]:
            return loss(trainable, trajectory, state.target_params, settings, axis_name)

        (grads, dual_grads), metrics = collectives.mean_grad(objective, axis_name)(
            (state.params, state.duals), trajectory
        )
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        dual_updates, dual_opt_state = dual_optimizer.update(dual_grads, state.dual_opt_state, state.duals)
        params = optax.apply_updates(state.params, updates)
        learn_calls = state.learn_calls + 1
        copy = learn_calls % agent_config.target_update_period == 0
        state = state.replace(
            params=params,
            opt_state=opt_state,
            duals=optax.apply_updates(state.duals, dual_updates),
            dual_opt_state=dual_opt_state,
            target_params=jax.tree.map(lambda new, old: jnp.where(copy, new, old), params, state.target_params),
            learn_calls=learn_calls,
        )
        return state, {**metrics, "grad_norm": optax.tree.norm(flat_vector(grads))}

    agent = network_agent.network_agent(config, optimizer, learn)

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> VMPOState:
        learner = agent.init(key, observation_spec, action_spec)
        duals = initial_duals(agent_config, policy.head_for(action_spec)[0] == "gaussian")
        return VMPOState(
            params=learner.params,
            opt_state=learner.opt_state,
            normalizers=learner.normalizers,
            target_params=learner.params,
            duals=duals,
            dual_opt_state=dual_optimizer.init(duals),
            learn_calls=jnp.int32(0),
        )

    return dataclasses.replace(agent, init=init)


registry.register("vmpo", defaults=defaults, build=build, validate=validate)
