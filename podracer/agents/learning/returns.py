"""Multi-step return estimators over time-major arrays `[T, B]`.

All of them take the per-transition quantities of a trajectory: `rewards[t]`
and `discounts[t]` of the transition from step t to t+1 (the discount already
multiplied by gamma and zero at termination), values `v[0..T]` including the
bootstrap value of the last observation, and per-step `lambdas[t]` (zero where
the next observation ends an episode, which cuts the recursion there).
"""

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp


def lambda_returns(rewards: chex.Array, discounts: chex.Array, values: chex.Array, lambdas: chex.Array) -> chex.Array:
    """TD(lambda) returns, computed backwards (Sutton & Barto 2018, eq. 12.18, recursive form).

    G_t = r_t + d_t ((1 - lambda_t) v_{t+1} + lambda_t G_{t+1}),  with G_T = v_T.

    Args:
      rewards, discounts, lambdas: `[T, B]`.
      values: `[T + 1, B]`.
    Returns:
      `[T, B]` returns G_0..G_{T-1}.
    """
    chex.assert_rank([rewards, discounts, values, lambdas], 2)
    chex.assert_equal_shape([rewards, discounts, lambdas])
    chex.assert_equal_shape([values[1:], rewards])

    def backward(next_return, inputs):
        reward, discount, next_value, lambda_ = inputs
        g = reward + discount * ((1.0 - lambda_) * next_value + lambda_ * next_return)
        return g, g

    _, returns = jax.lax.scan(backward, values[-1], (rewards, discounts, values[1:], lambdas), reverse=True)
    return returns


def n_step_returns(
    rewards: chex.Array, discounts: chex.Array, values: chex.Array, lambdas: chex.Array, n: int
) -> chex.Array:
    """n-step returns from each of the first T - n + 1 steps (Sutton & Barto 2018, eq. 7.1).

    G_t = r_t + d_t r_{t+1} + ... + d_t...d_{t+n-2} r_{t+n-1} + d_t...d_{t+n-1} v_{t+n},

    cut where an episode ends inside the n steps (`lambdas[t] = 0`): there the
    return bootstraps from the value of the state reached, as `lambda_returns`
    over the window of n steps with lambda 1 inside the episode.

    Args:
      rewards, discounts, lambdas: `[T, B]`.
      values: `[T + 1, B]`.
      n: steps of real reward, at most T.
    Returns:
      `[T - n + 1, B]` returns G_0..G_{T-n}.
    """
    chex.assert_equal_shape([rewards, discounts, lambdas])
    chex.assert_equal_shape([values[1:], rewards])
    windows = rewards.shape[0] - n + 1
    # `lambda_returns`' recursion, run backwards over the n steps of every window at once (as rlax's
    # n_step_bootstrapped_returns does): n vector steps rather than one scan per window.
    returns = values[n : n + windows]
    for k in reversed(range(n)):
        step = slice(k, k + windows)
        next_values = values[k + 1 : k + 1 + windows]
        returns = rewards[step] + discounts[step] * ((1.0 - lambdas[step]) * next_values + lambdas[step] * returns)
    return returns


def generalized_advantages(
    rewards: chex.Array, discounts: chex.Array, values: chex.Array, lambdas: chex.Array
) -> chex.Array:
    """GAE (Schulman et al. 2016, eq. 16): A_t = sum_k (prod d lambda) delta_{t+k}.

    Identical to the TD(lambda) return minus the baseline, which is how it is computed.
    """
    return lambda_returns(rewards, discounts, values, lambdas) - values[:-1]


class VTraceOutput(NamedTuple):
    vs: chex.Array  # [T, B] V-trace value targets v_s.
    pg_advantages: chex.Array  # [T, B] importance-weighted policy-gradient advantages.


def vtrace(
    rewards: chex.Array,
    discounts: chex.Array,
    values: chex.Array,
    log_rhos: chex.Array,
    lambdas: chex.Array,
    clip_rho_threshold: float = 1.0,
    clip_pg_rho_threshold: float = 1.0,
    clip_c_threshold: float = 1.0,
) -> VTraceOutput:
    """V-trace targets and policy-gradient advantages (Espeholt et al. 2018, "IMPALA", Section 4).

    With rho_t = min(clip_rho, pi/mu) and c_t = lambda_t min(clip_c, pi/mu), the
    n-step target of eq. (1), computed backwards (Remark 1):

      delta_t = rho_t (r_t + d_t v_{t+1} - v_t)
      vs_t - v_t = delta_t + d_t c_t (vs_{t+1} - v_{t+1}),  with vs_T = v_T.

    The policy-gradient advantage of Section 4.2, with lambda as in rlax:

      q_t = r_t + d_t (lambda_t vs_{t+1} + (1 - lambda_t) v_{t+1}),  vs_T = v_T,
      pg_advantages_t = min(clip_pg_rho, pi/mu) (q_t - v_t).

    Gradients flow through every input; stopping them (on `log_rhos` and on the
    returned targets) is the caller's job.

    Args:
      rewards, discounts, lambdas: `[T, B]`.
      values: `[T + 1, B]`.
      log_rhos: `[T, B]` log pi(a_t|x_t) - log mu(a_t|x_t).
      clip_rho_threshold: rho-bar, the clip on the importance weights in delta_t.
      clip_pg_rho_threshold: the clip on the importance weights of the policy gradient.
      clip_c_threshold: c-bar, the clip on the trace coefficients.
    Returns:
      `VTraceOutput` with `vs` and `pg_advantages`, both `[T, B]`.
    """
    chex.assert_rank([rewards, discounts, values, log_rhos, lambdas], 2)
    chex.assert_equal_shape([rewards, discounts, log_rhos, lambdas])
    chex.assert_equal_shape([values[1:], rewards])

    is_weights = jnp.exp(log_rhos)
    rhos = jnp.minimum(clip_rho_threshold, is_weights)
    cs = lambdas * jnp.minimum(clip_c_threshold, is_weights)
    deltas = rhos * (rewards + discounts * values[1:] - values[:-1])

    def backward(next_correction, inputs):
        delta, discount, c = inputs
        correction = delta + discount * c * next_correction
        return correction, correction

    _, corrections = jax.lax.scan(backward, jnp.zeros_like(values[-1]), (deltas, discounts, cs), reverse=True)
    vs = values[:-1] + corrections
    next_vs = jnp.concatenate([vs[1:], values[-1:]], axis=0)
    q_estimates = rewards + discounts * (lambdas * next_vs + (1.0 - lambdas) * values[1:])
    pg_advantages = jnp.minimum(clip_pg_rho_threshold, is_weights) * (q_estimates - values[:-1])
    return VTraceOutput(vs=vs, pg_advantages=pg_advantages)
