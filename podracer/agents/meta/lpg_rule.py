"""The learned policy gradient (LPG) of Oh et al. 2020, "Discovering Reinforcement Learning Algorithms": its
meta-network, the agent update it drives, and the pieces of the meta-objective, as pure functions.

An LPG agent has a policy pi_theta(a|s) and a prediction vector y_theta(s), a
categorical distribution over m categories whose meaning nobody fixes. The
meta-network eta reads each trajectory *backwards* with an LSTM (so each
step sees what came after it, as a return does) and outputs, per transition,
a scalar policy target pi_hat_t and a prediction target y_hat_t over the m
categories (Section 3, Figure 1b). Its per-step input is

  x_t = [r_{t+1}, d_{t+1}, gamma_t, pi(a_t|s_t), phi(y(s_t)), phi(y(s_{t+1}))]

the paper's [r_t, d_t, gamma, pi(a_t|s_t), y(s_t), y(s_{t+1})], the reward
indexed by the step it arrives at: the reward, whether the episode ends, the
discount, the probability of the action taken, and both predictions through
one shared embedding phi (a dense layer of `embedding_size` units, ReLU,
then a dense layer to 1). Two inputs differ from the paper's: the discount
is gamma times the environment's (0 at a termination, where the paper gives
the constant gamma), and d is 1 at any episode end, a truncation too. Each
environment (the batch axis) is read independently. The LSTM is not reset at
episode ends inside a trajectory (d tells it); the LAST -> FIRST reset step
is read too, its targets masked out.

The agent moves towards the targets (Eq. 2):

  Delta theta ∝ E[grad log pi_theta(a|s) pi_hat - alpha_y grad KL(y_theta(s) || y_hat)]

written here as the loss `agent_loss` = -E[log pi pi_hat] + alpha_y E[KL(y || y_hat)].
The meta-network reads the agent's outputs held constant: to the agent's
update the targets are data, so `jax.grad` of the loss in the agent's
parameters is exactly Eq. 2, while the loss stays differentiable in eta,
through the targets. A meta-gradient through K such updates follows eta
through the targets and through each update's effect on the next; it does
not follow the meta-network's reading of theta (the inputs pi and y), which
the stop-gradient truncates.

Meta-training (Eq. 3) ascends the return of the updated agents, written here
as an A2C objective (`meta_objective`), with the regularisers of Eq. 4
(`regularisers`). The paper's sizes: an LSTM of 256 units, phi of 16 units,
m = 30; the defaults here are smaller for CPUs (`RuleSettings`).
"""

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from podracer.agents.learning.losses import policy_gradient_loss
from podracer.agents.learning.returns import lambda_returns
from podracer.agents.models import networks, policy
from podracer.agents.models.cores import Core, initial_state
from podracer.agents.models.torsos import MLP
from podracer.agents.trajectory import Trajectory, Transitions, transitions


@dataclasses.dataclass(frozen=True)
class RuleSettings:
    """What rebuilds a meta-network: its LSTM's units (the paper's 256), the prediction size m (30) and phi's
    units (16). Saved beside the parameters (`rule_checkpoint`)."""

    hidden_size: int = 32
    prediction_size: int = 30
    embedding_size: int = 16


class MetaNetwork(nn.Module):
    """`(inputs [T, B, 4], y_t [T, B, m], y_tp1 [T, B, m]) -> (pi_hat [T, B], log y_hat [T, B, m])`, read backwards.

    `inputs` are each transition's reward, episode end, discount and pi(a_t|s_t).
    The LSTM is `cores.Core` run over the reversed sequence, starting at zeros.
    """

    settings: RuleSettings

    @nn.compact
    def __call__(self, inputs: jnp.ndarray, y_t: jnp.ndarray, y_tp1: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        chex.assert_rank([inputs, y_t, y_tp1], 3)
        phi_hidden, phi_out = MLP((self.settings.embedding_size,), "relu", name="phi"), nn.Dense(1, name="phi_out")
        features = jnp.concatenate([inputs, phi_out(phi_hidden(y_t)), phi_out(phi_hidden(y_tp1))], axis=-1)
        size = self.settings.hidden_size
        state = jax.tree.map(lambda x: x.astype(features.dtype), initial_state("lstm", size, features.shape[1]))
        _, hidden = Core("lstm", size)(state, features[::-1], jnp.zeros(features.shape[:2], bool))
        hidden = hidden[::-1]
        pi_hat = nn.Dense(1, name="pi_hat")(hidden)[..., 0]
        return pi_hat, jax.nn.log_softmax(nn.Dense(self.settings.prediction_size, name="y_hat")(hidden))


def init_rule(key: chex.PRNGKey, settings: RuleSettings) -> Any:
    """Fresh meta-network parameters eta for `settings`."""
    m = settings.prediction_size
    dummy = (jnp.zeros((1, 1, 4)), jnp.full((1, 1, m), 1.0 / m), jnp.full((1, 1, m), 1.0 / m))
    return MetaNetwork(settings).init(key, *dummy)


def apply_rule(
    meta_params: Any, settings: RuleSettings, tr: Transitions, action_probs: chex.Array, y: chex.Array
) -> tuple[chex.Array, chex.Array]:
    """The targets `(pi_hat [T, B], log y_hat [T, B, m])` of a trajectory's transitions `tr` (leaves `[T, B]`), the
    probabilities pi(a_t|s_t) `[T, B]` and the predictions y(s_t) at its T + 1 timesteps `[T + 1, B, m]`."""
    chex.assert_rank([action_probs, y], [2, 3])
    chex.assert_equal_shape([tr.rewards, action_probs, y[1:, ..., 0]])
    inputs = jnp.stack([tr.rewards, tr.ends_episode, tr.discounts, action_probs], axis=-1)
    return MetaNetwork(settings).apply(meta_params, inputs, y[:-1], y[1:])


class AgentOutputs(NamedTuple):
    """An LPG agent's outputs on a trajectory: the policy where actions were chosen (leaves `[T, B, ...]`), log
    pi(a_t|s_t) `[T, B]`, log y(s) at every timestep `[T + 1, B, m]`, and the transitions."""

    policy: dict
    log_pi: chex.Array
    log_y: chex.Array
    tr: Transitions


def agent_outputs(agent_params: Any, trajectory: Trajectory, unroll_fn: Callable, gamma: float) -> AgentOutputs:
    """The agent network's outputs on `trajectory` (a network whose value head is y's logits)."""
    outputs, y_logits = networks.unroll_trajectory(unroll_fn, agent_params, trajectory)
    outputs = jax.tree.map(lambda x: x[:-1], outputs)
    log_pi = policy.log_prob(outputs, trajectory.action)
    return AgentOutputs(
        policy=outputs, log_pi=log_pi, log_y=jax.nn.log_softmax(y_logits), tr=transitions(trajectory, gamma)
    )


def targets(meta_params: Any, settings: RuleSettings, out: AgentOutputs) -> tuple[chex.Array, chex.Array]:
    """`apply_rule` on the agent's outputs, held constant (the module docstring says why)."""
    action_probs, y = jax.lax.stop_gradient((jnp.exp(out.log_pi), jnp.exp(out.log_y)))
    return apply_rule(meta_params, settings, out.tr, action_probs, y)


def agent_loss(
    agent_params: Any,
    meta_params: Any,
    trajectory: Trajectory,
    *,
    settings: RuleSettings,
    unroll_fn: Callable,
    gamma: float,
    prediction_cost: float,
) -> tuple[chex.Array, dict]:
    """The LPG update (Eq. 2) as a loss: L = -E[log pi(a_t|s_t) pi_hat_t] + alpha_y E[KL(y(s_t) || y_hat_t)].

    alpha_y is `prediction_cost`. Means over the T x B transitions, the reset
    steps counted as zero (`Transitions.valid`), so shards average exactly.
    """
    out = agent_outputs(agent_params, trajectory, unroll_fn, gamma)
    pi_hat, log_y_hat = targets(meta_params, settings, out)
    valid = out.tr.valid
    log_y = out.log_y[:-1]
    kl = jnp.sum(jnp.exp(log_y) * (log_y - log_y_hat), axis=-1)
    policy_loss = -jnp.mean(valid * out.log_pi * pi_hat)
    prediction_loss = jnp.mean(valid * kl)
    total = policy_loss + prediction_cost * prediction_loss
    entropy = jnp.mean(valid * policy.entropy(out.policy))
    metrics = {"loss": total, "policy_loss": policy_loss, "prediction_loss": prediction_loss, "entropy": entropy}
    return total, {**metrics, "pi_hat": jnp.mean(valid * pi_hat)}


def meta_objective(
    agent_params: Any,
    trajectory: Trajectory,
    values: chex.Array,
    *,
    unroll_fn: Callable,
    gamma: float,
    td_lambda: float,
) -> tuple[chex.Array, dict]:
    """The updated agent's A2C objective, to minimise: -E[log pi(a_t|s_t) sg(G_t - v_t)] (Eq. 3's E[grad log pi G],
    with a baseline).

    `values` `[T + 1, B]` are a baseline held constant, e.g. a critic the
    meta-trainer keeps (the agent itself predicts y, not values); G_t is their
    TD(lambda) return. Zeros and `td_lambda=1` give REINFORCE.
    """
    chex.assert_rank(values, 2)
    out = agent_outputs(agent_params, trajectory, unroll_fn, gamma)
    returns = lambda_returns(out.tr.rewards, out.tr.discounts, values, out.tr.lambdas(td_lambda))
    advantages = returns - values[:-1]
    loss, metrics = policy_gradient_loss(
        out.log_pi, out.policy, values[:-1], out.tr.valid, advantages, returns, value_cost=0.0, entropy_cost=0.0
    )
    return loss, {"meta_objective": -metrics["policy_loss"], "entropy": metrics["entropy"]}


def regularisers(
    agent_params: Any,
    meta_params: Any,
    trajectory: Trajectory,
    *,
    settings: RuleSettings,
    unroll_fn: Callable,
    gamma: float,
    costs: tuple[float, float, float, float],
) -> tuple[chex.Array, dict]:
    """The regularisers of Eq. 4, as a loss to add to the meta-objective's:

      -beta_0 H(pi) - beta_1 H(y) + beta_2 ||pi_hat||^2 + beta_3 ||y_hat||^2

    `costs` are (beta_0, beta_1, beta_2, beta_3). The entropies keep the
    agents from collapsing early; the L2 terms keep the targets small. Means
    over the valid transitions; the norms are per transition. Unlike the
    update's, these targets read the agent's outputs as they are, so the
    gradient in eta is the whole one, through the updated agent too. The
    targets penalised are those the rule gives the updated agent on the
    validation unroll, not those that drove the K inner updates (GROOVE's
    reproduction, Jackson et al. 2023, penalises the latter; the paper does
    not say which).
    """
    out = agent_outputs(agent_params, trajectory, unroll_fn, gamma)
    pi_hat, log_y_hat = apply_rule(meta_params, settings, out.tr, jnp.exp(out.log_pi), jnp.exp(out.log_y))
    valid = out.tr.valid
    log_y = out.log_y[:-1]
    terms = {
        "policy_entropy": jnp.mean(valid * policy.entropy(out.policy)),
        "prediction_entropy": jnp.mean(valid * -jnp.sum(jnp.exp(log_y) * log_y, axis=-1)),
        "pi_hat_l2": jnp.mean(valid * pi_hat**2),
        "y_hat_l2": jnp.mean(valid * jnp.sum(jnp.exp(log_y_hat) ** 2, axis=-1)),
    }
    signs = (-1.0, -1.0, 1.0, 1.0)
    total = sum(sign * cost * value for sign, cost, value in zip(signs, costs, terms.values(), strict=True))
    return total, terms
