"""Multi-step return estimators over time-major arrays `[T, B]`.

All of them take the per-transition quantities of a trajectory: `rewards[t]`
and `discounts[t]` of the transition from step t to t+1 (the discount already
multiplied by gamma and zero at termination), values `v[0..T]` including the
bootstrap value of the last observation, and per-step `lambdas[t]` (zero where
the next observation ends an episode, which cuts the recursion there).
"""

import chex
import jax


def lambda_returns(
    rewards: chex.Array, discounts: chex.Array, values: chex.Array, lambdas: chex.Array
) -> chex.Array:
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

    _, returns = jax.lax.scan(
        backward, values[-1], (rewards, discounts, values[1:], lambdas), reverse=True
    )
    return returns


def generalized_advantages(
    rewards: chex.Array, discounts: chex.Array, values: chex.Array, lambdas: chex.Array
) -> chex.Array:
    """GAE (Schulman et al. 2016, eq. 16): A_t = sum_k (prod d lambda) delta_{t+k}.

    Identical to the TD(lambda) return minus the baseline, which is how it is computed.
    """
    return lambda_returns(rewards, discounts, values, lambdas) - values[:-1]
