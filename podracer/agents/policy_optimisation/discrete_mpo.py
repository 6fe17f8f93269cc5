"""MPO for discrete actions, from the device replay buffer: the E-step exact over the actions, no sampling.

A policy network and a Q-network, both `networks.QNetwork`s (the policy's
outputs are its logits, so illegal actions are masked alike), each with a
Polyak-averaged target (`agent.target_tau` after every gradient step). Per
gradient step, on sampled transitions (s, a, r, s') (Abdolmaleki et al. 2018,
Section 4 and Algorithm 1, with a categorical policy):

- critic: 1/2 E[(Q(s, a) - y)^2], y = r + gamma d sum_a' pi'(a'|s') Q'(s', a')
  (the expected value of the target policy under the target critic);
- E-step (eqs. 7-9, `em_losses.e_step` over the actions):
  q(a|s) proportional to pi'(a|s) exp(Q'(s, a) / eta), and the dual
  g(eta) = eta epsilon + eta E_s log sum_a pi'(a|s) exp(Q'(s, a) / eta);
- M-step (eqs. 10-11): -E_s sum_a q(a|s) log pi(a|s) under
  KL(pi'(.|s) || pi(.|s)) <= `agent.epsilon_mean` (the one bound a categorical
  has; `agent.epsilon_stddev` is a Gaussian's), its multiplier alpha learned
  by alpha (epsilon - sg KL) (`em_losses.kl_constraint`).

`act` samples the policy; `greedy_act` takes its most likely action. A
prioritised buffer's priority is the absolute TD error.
"""

import dataclasses
import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct
from ml_collections import ConfigDict

from podracer.agents.agent import Agent
from podracer.agents.algorithms import shared_fields
from podracer.agents.learning import replay
from podracer.agents.learning.optimizer import LearnerState, flat_vector, make_optimizer
from podracer.agents.models import networks, policy
from podracer.agents.policy_optimisation import em_losses
from podracer.agents.trajectory import transitions
from podracer.devices import collectives
from podracer.devices.per_device import PerDevice


@struct.dataclass
class DiscreteMPOState:
    policy: LearnerState  # params: the policy network (its outputs are logits).
    critic: LearnerState  # params: the Q-network.
    target_policy: networks.NetworkParams
    target_critic: networks.NetworkParams
    duals: dict  # The parameters of eta and alpha (`em_losses.dual_value`).
    dual_opt_state: Any
    replay: PerDevice  # Each device's own `replay.Replay`.
    learn_calls: chex.Array  # int32: `learn` calls so far.


def outputs(params: networks.NetworkParams, observation: Any) -> chex.Array:
    """A feed-forward `QNetwork`'s outputs for observations `[L, S, ...]`: `[L, S, A]`."""
    return jax.vmap(lambda o: params.step((), o)[1])(observation)


def critic_loss(critic: networks.NetworkParams, sample: replay.Sample, targets: chex.Array, valid: chex.Array):
    """1/2 E[w (Q(s, a) - y)^2] over the valid transitions; aux `(metrics, priorities [S])`."""
    q_values = outputs(critic, sample.trajectory.timestep.observation)[0]
    chosen = jnp.take_along_axis(q_values, sample.trajectory.action[0][:, None], axis=-1)[:, 0]
    td_errors = targets - chosen
    loss = em_losses.masked_mean(sample.weights * 0.5 * td_errors**2, valid)
    return loss, ({"critic_loss": loss, "q_mean": em_losses.masked_mean(chosen, valid)}, jnp.abs(td_errors))


def policy_loss(trainable: tuple, observation: Any, old_logits: chex.Array, q_values: chex.Array, valid, settings):
    """The temperature's dual and the M-step with its trust region, of `(policy network, duals)`."""
    params, duals = trainable
    temperature, alpha = em_losses.dual_value(duals["temperature"]), em_losses.dual_value(duals["alpha"])
    old_log_probs = jax.nn.log_softmax(old_logits)
    weights, temperature_loss, metrics = em_losses.e_step(
        q_values, old_log_probs, temperature, settings["epsilon"], valid, axis=-1
    )
    logits = params.step((), observation)[1]
    fit = -em_losses.masked_mean(jnp.sum(weights * jax.nn.log_softmax(logits), axis=-1), valid)
    kl = em_losses.masked_mean(em_losses.categorical_kl(old_logits, logits), valid)
    penalty, alpha_loss = em_losses.kl_constraint(kl, alpha, settings["epsilon_mean"])
    total = fit + penalty + temperature_loss + alpha_loss
    return total, {**metrics, "alpha": alpha, "kl_policy": kl, "actor_loss": total}


def act(params: networks.NetworkParams, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """An action per environment sampled from the policy's logits."""
    return policy.sample(key, {"logits": params.step((), observation)[1]}), {}


def greedy_act(params: networks.NetworkParams, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """The policy's most likely action per environment."""
    return policy.mode(key, {"logits": params.step((), observation)[1]}), {}


@dataclasses.dataclass(frozen=True)
class Setup:
    """What a gradient step reads: `config.agent`'s fields (described in `mpo.OWN_DEFAULTS`) and the optimisers."""

    gamma: float
    reward_clip: float
    target_tau: float
    epsilon: float
    epsilon_mean: float
    optimizer: optax.GradientTransformation  # The policy's and the critic's (each with its own state).
    dual_optimizer: optax.GradientTransformation


def gradient_step(setup: Setup, state: DiscreteMPOState, sample: replay.Sample, axis_name) -> tuple:
    """The critic's step towards the target policy's expected target value, then `improve`; `(state, metrics,
    priorities)` as the replay loop takes them."""
    observation = sample.trajectory.timestep.observation
    tr = transitions(sample.trajectory, setup.gamma, setup.reward_clip)
    old_logits = outputs(state.target_policy, observation)  # [2, S, A]
    q_target = outputs(state.target_critic, observation)
    next_value = jnp.sum(jax.nn.softmax(old_logits[1]) * q_target[1], axis=-1)
    targets = jax.lax.stop_gradient(tr.rewards[0] + tr.discounts[0] * next_value)
    loss = functools.partial(critic_loss, targets=targets, valid=tr.valid[0])
    grads, (metrics, priorities) = collectives.local_grad(loss, axis_name)(state.critic.params, sample)
    grads, metrics = collectives.mean((grads, metrics), axis_name)
    updates, opt_state = setup.optimizer.update(grads, state.critic.opt_state, state.critic.params)
    critic = LearnerState(optax.apply_updates(state.critic.params, updates), opt_state)
    settings = {"epsilon": setup.epsilon, "epsilon_mean": setup.epsilon_mean}
    objective = functools.partial(
        policy_loss, old_logits=old_logits[0], q_values=q_target[0], valid=tr.valid[0], settings=settings
    )
    state, policy_metrics = improve(setup, state.replace(critic=critic), objective, observation, axis_name)
    return state, {**metrics, **policy_metrics, "critic_grad_norm": optax.tree.norm(flat_vector(grads))}, priorities


def improve(setup: Setup, state: DiscreteMPOState, objective, observation: Any, axis_name) -> tuple:
    """The policy's and the duals' step on `objective` at the first observations, then both targets' moves."""
    first = jax.tree.map(lambda x: x[0], observation)
    (grads, dual_grads), metrics = collectives.mean_grad(objective, axis_name)(
        (state.policy.params, state.duals), first
    )
    updates, opt_state = setup.optimizer.update(grads, state.policy.opt_state, state.policy.params)
    policy_learner = LearnerState(optax.apply_updates(state.policy.params, updates), opt_state)
    dual_updates, dual_opt_state = setup.dual_optimizer.update(dual_grads, state.dual_opt_state, state.duals)
    state = state.replace(
        policy=policy_learner,
        target_policy=optax.incremental_update(policy_learner.params, state.target_policy, setup.target_tau),
        target_critic=optax.incremental_update(state.critic.params, state.target_critic, setup.target_tau),
        duals=optax.apply_updates(state.duals, dual_updates),
        dual_opt_state=dual_opt_state,
    )
    return state, {**metrics, "actor_grad_norm": optax.tree.norm(flat_vector(grads))}


def build(config: ConfigDict, num_updates: int) -> Agent:
    agent_config, network = config.agent, shared_fields.network_settings(config)
    replay_setup = shared_fields.replay_setup(config, sequence_length=2)
    setup = Setup(
        **{field: agent_config[field] for field in ("gamma", "reward_clip", "target_tau", "epsilon", "epsilon_mean")},
        optimizer=make_optimizer(
            shared_fields.optimizer_settings(config), gradient_steps=num_updates * agent_config.replay_ratio
        ),
        dual_optimizer=optax.adam(agent_config.dual_learning_rate),
    )

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> DiscreteMPOState:
        module = networks.make_q_network(network, observation_spec, action_spec)
        policy_key, critic_key = jax.random.split(key)
        policy_params, critic = (networks.init_module(k, module, observation_spec) for k in (policy_key, critic_key))
        duals = {name: em_losses.dual_param(agent_config[f"initial_{name}"]) for name in ("temperature", "alpha")}
        return DiscreteMPOState(
            policy=LearnerState(policy_params, setup.optimizer.init(policy_params)),
            critic=LearnerState(critic, setup.optimizer.init(critic)),
            target_policy=policy_params,
            target_critic=critic,
            duals=duals,
            dual_opt_state=setup.dual_optimizer.init(duals),
            replay=replay.init(replay_setup, observation_spec, jax.ShapeDtypeStruct((), jnp.int32)),
            learn_calls=jnp.int32(0),
        )

    replayed_learn = replay.make_learn(replay_setup, functools.partial(gradient_step, setup))

    def learn(state: DiscreteMPOState, trajectory, key: chex.PRNGKey, axis_name=None):
        return replayed_learn(state, trajectory.replace(extras={}), key, axis_name)

    return Agent(
        init=init,
        act=act,
        learn=learn,
        acting_params=lambda state: state.policy.params,
        greedy_act=greedy_act,
        remember=functools.partial(replay.remember, replay_setup),
    )
