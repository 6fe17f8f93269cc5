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


def policy_gradient_loss(
    log_probs: jnp.ndarray,
    logits: jnp.ndarray,
    values: jnp.ndarray,
    valid: jnp.ndarray,
    advantages: jnp.ndarray,
    value_targets: jnp.ndarray,
    *,
    value_cost: float,
    entropy_cost: float,
) -> tuple[jnp.ndarray, dict]:
    """The actor-critic objective above from given advantages and value targets, both held constant.

    Per-transition inputs `[T, B]` (`logits` `[T, B, A]`): log pi(a_t|s_t), the
    policy's logits and the values v_t of the observations actions were chosen
    from. Shared with IMPALA, whose advantages and targets come from V-trace.
    """
    policy_loss = -jnp.mean(valid * log_probs * jax.lax.stop_gradient(advantages))
    value_loss = 0.5 * jnp.mean(valid * (jax.lax.stop_gradient(value_targets) - values) ** 2)
    entropy = jnp.mean(valid * policy.entropy(logits))
    total = policy_loss + value_cost * value_loss - entropy_cost * entropy
    return total, {"loss": total, "policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy}


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
    returns = lambda_returns(tr.rewards, tr.discounts, values, td_lambda * (1.0 - tr.bootstrap_here))
    return policy_gradient_loss(
        policy.log_prob(logits[:-1], trajectory.action),
        logits[:-1],
        values[:-1],
        tr.valid,
        returns - values[:-1],
        returns,
        value_cost=value_cost,
        entropy_cost=entropy_cost,
    )
