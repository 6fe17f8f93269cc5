"""Advantage actor-critic with TD(lambda) returns, the agent of the Podracer paper's Anakin colab.

Policy gradient (Williams 1992; Mnih et al. 2016, "A3C", eq. for the
advantage actor-critic) with the TD(lambda) return as target (Sutton & Barto
2018, eq. 12.18), a squared-error critic and an entropy bonus:

  L = -E[log pi(a_t|s_t) sg(G_t - v_t)] + c_v E[1/2 (sg(G_t) - v_t)^2] - c_H E[H(pi(.|s_t))]

Means run over all T x B transitions of the local shard with masked entries
counted as zero, so averaging equal shards across devices (`pmean`) gives
exactly the loss of the whole batch on one device.
"""

from typing import Any, Callable

import jax
import jax.numpy as jnp

from podracer.agents import policy
from podracer.agents.returns import lambda_returns
from podracer.agents.trajectory import Trajectory, merge_leading_dims, transitions


def evaluate(apply_fn: Callable, params: Any, observation: Any, leading_shape: tuple) -> tuple:
    """Runs the network on observations with leading dims `leading_shape` (e.g. `[T + 1, B]`)."""
    logits, values = apply_fn(params, merge_leading_dims(observation, len(leading_shape)))
    return logits.reshape(leading_shape + logits.shape[-1:]), values.reshape(leading_shape)


def loss(
    params: Any,
    trajectory: Trajectory,
    *,
    apply_fn: Callable,
    gamma: float,
    td_lambda: float,
    value_cost: float,
    entropy_cost: float,
) -> tuple[jnp.ndarray, dict]:
    step_type = trajectory.timestep.step_type
    logits, values = evaluate(apply_fn, params, trajectory.timestep.observation, step_type.shape)
    tr = transitions(trajectory, gamma)
    returns = jax.lax.stop_gradient(
        lambda_returns(tr.rewards, tr.discounts, values, td_lambda * (1.0 - tr.bootstrap_here))
    )
    advantages = returns - values[:-1]
    log_probs = policy.log_prob(logits[:-1], trajectory.action)
    policy_loss = -jnp.mean(tr.valid * log_probs * jax.lax.stop_gradient(advantages))
    value_loss = 0.5 * jnp.mean(tr.valid * advantages**2)
    entropy = jnp.mean(tr.valid * policy.entropy(logits[:-1]))
    total = policy_loss + value_cost * value_loss - entropy_cost * entropy
    return total, {"loss": total, "policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy}
