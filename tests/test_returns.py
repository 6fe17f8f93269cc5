"""lambda_returns and generalized_advantages against plain NumPy loops (float64)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import returns

# Jitted once per shape, so the many parametrised cases share one compilation.
lambda_returns = jax.jit(returns.lambda_returns)
generalized_advantages = jax.jit(returns.generalized_advantages)

T, B = 7, 4


def _np_lambda_returns(rewards, discounts, values, lambdas):
    """G_t = r_t + d_t ((1 - l_t) v_{t+1} + l_t G_{t+1}), G_T = v_T (Sutton & Barto eq. 12.18)."""
    rewards, discounts, values, lambdas = (np.asarray(x, np.float64) for x in (rewards, discounts, values, lambdas))
    num_steps = rewards.shape[0]
    returns = np.zeros_like(rewards)
    next_return = values[num_steps].copy()
    for t in reversed(range(num_steps)):
        next_return = rewards[t] + discounts[t] * ((1 - lambdas[t]) * values[t + 1] + lambdas[t] * next_return)
        returns[t] = next_return
    return returns


def _np_gae(rewards, discounts, values, lambdas):
    """delta_t = r_t + d_t v_{t+1} - v_t; A_t = delta_t + d_t l_t A_{t+1}, A_T = 0 (Schulman et al. 2016)."""
    rewards, discounts, values, lambdas = (np.asarray(x, np.float64) for x in (rewards, discounts, values, lambdas))
    num_steps = rewards.shape[0]
    advantages = np.zeros_like(rewards)
    next_advantage = np.zeros(rewards.shape[1:])
    for t in reversed(range(num_steps)):
        delta = rewards[t] + discounts[t] * values[t + 1] - values[t]
        next_advantage = delta + discounts[t] * lambdas[t] * next_advantage
        advantages[t] = next_advantage
    return advantages


def _inputs(seed, lambdas=None):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(T, B)).astype(np.float32)
    # Discounts in [0, 1] with some exact zeros (terminations).
    discounts = (0.99 * rng.uniform(size=(T, B)) * (rng.uniform(size=(T, B)) > 0.2)).astype(np.float32)
    values = rng.normal(size=(T + 1, B)).astype(np.float32)
    if lambdas is None:
        lambdas = rng.uniform(size=(T, B))
        lambdas[rng.uniform(size=(T, B)) < 0.2] = 0.0  # Cuts, as at episode ends.
        lambdas[rng.uniform(size=(T, B)) < 0.2] = 1.0
    lambdas = np.broadcast_to(np.asarray(lambdas, np.float32), (T, B)).copy()
    return rewards, discounts, values, lambdas


def _jax(fn, *args):
    return np.asarray(fn(*(jnp.asarray(a) for a in args)), np.float64)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("lam", [None, 0.0, 1.0, 0.9])
def test_lambda_returns_matches_numpy_loop(seed, lam):
    args = _inputs(seed, lam)
    got = _jax(lambda_returns, *args)
    assert got.shape == (T, B)
    np.testing.assert_allclose(got, _np_lambda_returns(*args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("lam", [None, 0.0, 1.0, 0.9])
def test_generalized_advantages_matches_numpy_loop(seed, lam):
    args = _inputs(seed, lam)
    got = _jax(generalized_advantages, *args)
    assert got.shape == (T, B)
    np.testing.assert_allclose(got, _np_gae(*args), rtol=1e-5, atol=1e-5)


def test_lambda_zero_is_one_step_td_target():
    rewards, discounts, values, lambdas = _inputs(3, 0.0)
    got = _jax(lambda_returns, rewards, discounts, values, lambdas)
    expected = rewards.astype(np.float64) + discounts.astype(np.float64) * values[1:].astype(np.float64)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    # And the GAE advantage is then the one-step TD error.
    np.testing.assert_allclose(
        _jax(generalized_advantages, rewards, discounts, values, lambdas), expected - values[:-1], rtol=1e-6, atol=1e-6
    )


@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.97, 1.0])
def test_lambda_one_is_discounted_monte_carlo_return_plus_bootstrap(gamma):
    rewards, _, values, lambdas = _inputs(4, 1.0)
    discounts = np.full((T, B), gamma, np.float32)
    got = _jax(lambda_returns, rewards, discounts, values, lambdas)
    r = rewards.astype(np.float64)
    expected = np.zeros((T, B))
    for t in range(T):
        # sum_{k=t}^{T-1} gamma^{k-t} r_k + gamma^{T-t} v_T
        expected[t] = sum(gamma ** (k - t) * r[k] for k in range(t, T)) + gamma ** (T - t) * values[T].astype(np.float64)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.95, 1.0])
def test_constant_lambda_is_weighted_average_of_n_step_returns(lam):
    """Forward view (Sutton & Barto eq. 12.3, truncated at T): independent of the recursion."""
    rewards, discounts, values, lambdas = (x.astype(np.float64) for x in _inputs(5, lam))
    got = _jax(lambda_returns, *(x.astype(np.float32) for x in (rewards, discounts, values, lambdas)))

    def n_step(t, n):  # r_t + d_t r_{t+1} + ... + (d_t ... d_{t+n-1}) v_{t+n}
        total, scale = np.zeros(B), np.ones(B)
        for k in range(t, t + n):
            total = total + scale * rewards[k]
            scale = scale * discounts[k]
        return total + scale * values[t + n]

    expected = np.zeros((T, B))
    for t in range(T):
        horizon = T - t
        expected[t] = sum((1 - lam) * lam ** (n - 1) * n_step(t, n) for n in range(1, horizon)) + lam ** (
            horizon - 1
        ) * n_step(t, horizon)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_gae_is_discounted_sum_of_td_errors():
    """A_t = sum_k (prod_{j<k} d_{t+j} l_{t+j}) delta_{t+k} (Schulman et al. 2016, eq. 16)."""
    rewards, discounts, values, lambdas = (x.astype(np.float64) for x in _inputs(6))
    got = _jax(generalized_advantages, *(x.astype(np.float32) for x in (rewards, discounts, values, lambdas)))
    deltas = rewards + discounts * values[1:] - values[:-1]
    expected = np.zeros((T, B))
    for t in range(T):
        scale = np.ones(B)
        for k in range(t, T):
            expected[t] += scale * deltas[k]
            scale = scale * discounts[k] * lambdas[k]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_hand_computed_example():
    # T = 2, B = 1.
    rewards = jnp.array([[1.0], [2.0]])
    discounts = jnp.array([[0.9], [0.5]])
    values = jnp.array([[0.5], [1.0], [2.0]])
    lambdas = jnp.array([[0.5], [0.5]])
    # delta_1 = 2 + 0.5 * 2.0 - 1.0 = 2.0          A_1 = 2.0
    # delta_0 = 1 + 0.9 * 1.0 - 0.5 = 1.4          A_0 = 1.4 + 0.9 * 0.5 * 2.0 = 2.3
    # G_1 = 2 + 0.5 * (0.5 * 2.0 + 0.5 * 2.0) = 3.0
    # G_0 = 1 + 0.9 * (0.5 * 1.0 + 0.5 * 3.0) = 2.8
    np.testing.assert_allclose(generalized_advantages(rewards, discounts, values, lambdas), [[2.3], [2.0]], rtol=1e-6)
    np.testing.assert_allclose(lambda_returns(rewards, discounts, values, lambdas), [[2.8], [3.0]], rtol=1e-6)


def test_zero_lambda_and_zero_discount_cut_the_recursion():
    """What lies past a cut (lambda 0 or discount 0) never changes the earlier returns."""
    rewards, discounts, values, lambdas = _inputs(7)
    lambdas[3] = 0.0
    base = _jax(lambda_returns, rewards, discounts, values, lambdas)
    rewards2, values2 = rewards.copy(), values.copy()
    rewards2[4:] += 10.0
    values2[5:] -= 7.0
    moved = _jax(lambda_returns, rewards2, discounts, values2, lambdas)
    np.testing.assert_allclose(moved[:4], base[:4], rtol=1e-6, atol=1e-6)
    assert not np.allclose(moved[4:], base[4:])

    discounts[2] = 0.0
    base = _jax(lambda_returns, rewards, discounts, values, np.ones_like(lambdas))
    rewards2, values2 = rewards.copy(), values.copy()
    rewards2[3:] += 10.0
    values2[3:] -= 7.0
    moved = _jax(lambda_returns, rewards2, discounts, values2, np.ones_like(lambdas))
    np.testing.assert_allclose(moved[:3], base[:3], rtol=1e-6, atol=1e-6)
