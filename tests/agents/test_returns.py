"""Return estimators against plain NumPy loops (float64): TD(lambda) returns, GAE and V-trace."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents.learning import returns
from tests.references import (
    make_params,
    make_trajectory,
    np_apply,
    np_gae,
    np_lambda_returns,
    np_transitions,
    np_vtrace_recursive,
    np_vtrace_sum_form,
)

# Jitted once per shape, so the many parametrised cases share one compilation.
lambda_returns = jax.jit(returns.lambda_returns)
generalized_advantages = jax.jit(returns.generalized_advantages)
vtrace = jax.jit(returns.vtrace)  # Thresholds are traced: one compilation per shape.

T, B = 7, 4


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
    np.testing.assert_allclose(got, np_lambda_returns(*args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("lam", [None, 0.0, 1.0, 0.9])
def test_generalized_advantages_matches_numpy_loop(seed, lam):
    args = _inputs(seed, lam)
    got = _jax(generalized_advantages, *args)
    assert got.shape == (T, B)
    np.testing.assert_allclose(got, np_gae(*args), rtol=1e-5, atol=1e-5)


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
        expected[t] = sum(gamma ** (k - t) * r[k] for k in range(t, T)) + gamma ** (T - t) * values[T].astype(
            np.float64
        )
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


# ---------------------------------------------------------------------------------------------
# The shared reference trajectory's returns follow its episode boundaries.


def test_reference_returns_cut_at_episode_ends():
    gamma, lam = 0.9, 0.8
    trajectory, params = make_trajectory(), make_params()
    _, values = np_apply(params, trajectory.timestep.observation)
    rewards, discounts, valid, lambdas = np_transitions(trajectory, gamma, lam)
    targets = np_lambda_returns(rewards, discounts, values, lambdas)
    # Termination into t = 2 of column 0: no bootstrap at all.
    np.testing.assert_allclose(targets[1, 0], rewards[1, 0])
    # Truncation into t = 3 of column 1: bootstrap from the truncated observation's value.
    np.testing.assert_allclose(targets[2, 1], rewards[2, 1] + gamma * values[3, 1])
    # Termination at the last timestep of column 2.
    np.testing.assert_allclose(targets[4, 2], rewards[4, 2])
    np.testing.assert_array_equal(valid[:, 0], [1, 1, 0, 1, 1])
    np.testing.assert_array_equal(valid[:, 1], [1, 1, 1, 0, 1])
    np.testing.assert_array_equal(valid[:, 2], [1, 1, 1, 1, 1])


# ---------------------------------------------------------------------------------------------
# V-trace (Espeholt et al. 2018).

VT, VB = 8, 5


def _vtrace_inputs(seed, gamma=None, lam=None):
    """Random inputs; `gamma` / `lam` given: constant discounts / lambdas (no terminations / cuts)."""
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(VT, VB))
    values = rng.normal(size=(VT + 1, VB))
    log_rhos = 1.2 * rng.normal(size=(VT, VB))  # pi/mu from about 0.03 to 30: clipped and not.
    if gamma is None:
        discounts = 0.95 * rng.uniform(0.5, 1.0, size=(VT, VB)) * (rng.uniform(size=(VT, VB)) > 0.2)
    else:
        discounts = np.full((VT, VB), gamma)
    if lam is None:
        lambdas = rng.uniform(size=(VT, VB)) * (rng.uniform(size=(VT, VB)) > 0.2)
        lambdas[rng.uniform(size=(VT, VB)) < 0.2] = 1.0
    else:
        lambdas = np.full((VT, VB), lam)
    return tuple(x.astype(np.float32) for x in (rewards, discounts, values, log_rhos, lambdas))


def _jax_vtrace(args, clips):
    out = vtrace(*(jnp.asarray(a) for a in args), *(jnp.float32(c) for c in clips))
    assert out.vs.shape == out.pg_advantages.shape == (VT, VB)
    return np.asarray(out.vs, np.float64), np.asarray(out.pg_advantages, np.float64)


CLIPS = [(1.0, 1.0, 1.0), (1.5, 0.8, 0.6), (np.inf, np.inf, np.inf)]  # (rho-bar, pg rho-bar, c-bar).


def test_vtrace_test_data_clip_on_both_sides_and_cut():
    _, discounts, _, log_rhos, lambdas = _vtrace_inputs(0)
    ratio = np.exp(log_rhos)
    for threshold in (0.6, 0.8, 1.0, 1.5):
        assert 0.15 < np.mean(ratio > threshold) < 0.85
    assert np.any(discounts == 0) and np.any(lambdas == 0) and np.any(lambdas == 1)


@pytest.mark.parametrize("clips", CLIPS)
def test_vtrace_matches_paper_sum_form_with_constant_gamma(clips):
    args = _vtrace_inputs(1, gamma=0.9, lam=1.0)
    expected_vs, expected_pg = np_vtrace_sum_form(*args, *clips)
    vs, pg = _jax_vtrace(args, clips)
    np.testing.assert_allclose(vs, expected_vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pg, expected_pg, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", [2, 3])
@pytest.mark.parametrize("clips", CLIPS)
def test_vtrace_with_terminations_and_cuts_matches_both_numpy_forms(seed, clips):
    args = _vtrace_inputs(seed)
    expected_vs, expected_pg = np_vtrace_recursive(*args, *clips)
    sum_vs, sum_pg = np_vtrace_sum_form(*args, *clips)
    np.testing.assert_allclose(sum_vs, expected_vs, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(sum_pg, expected_pg, rtol=1e-10, atol=1e-10)
    vs, pg = _jax_vtrace(args, clips)
    np.testing.assert_allclose(vs, expected_vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pg, expected_pg, rtol=1e-5, atol=1e-5)


def test_vtrace_cut_and_termination_hide_the_future():
    """Past a zero lambda (or a termination) nothing changes vs or the advantages of earlier steps."""
    rewards, discounts, values, log_rhos, lambdas = _vtrace_inputs(4)
    lambdas[3] = 0.0
    discounts[3] = 0.9  # A truncation: the cut step still bootstraps from V(x_4).
    base = _jax_vtrace((rewards, discounts, values, log_rhos, lambdas), CLIPS[0])
    moved_args = (rewards.copy(), discounts, values.copy(), log_rhos.copy(), lambdas)
    moved_args[0][4:] += 10.0
    moved_args[2][5:] -= 7.0
    moved_args[3][4:] += 3.0
    moved = _jax_vtrace(moved_args, CLIPS[0])
    for got, expected in zip(moved, base, strict=True):
        np.testing.assert_allclose(got[:4], expected[:4], rtol=1e-6, atol=1e-6)
    # The truncated step itself: v_3 = V(x_3) + rho_3 (r_3 + d_3 V(x_4) - V(x_3)).
    rho = min(1.0, float(np.exp(log_rhos[3, 0])))
    v = values.astype(np.float64)
    td = rewards[3, 0] + discounts[3, 0] * v[4, 0] - v[3, 0]
    np.testing.assert_allclose(base[0][3, 0], v[3, 0] + rho * td, rtol=1e-5)
    # A termination (discount 0) ignores V(x_{t+1}) altogether.
    discounts[3] = 0.0
    vs, _ = _jax_vtrace((rewards, discounts, values, log_rhos, lambdas), CLIPS[0])
    np.testing.assert_allclose(vs[3, 0], v[3, 0] + rho * (rewards[3, 0] - v[3, 0]), rtol=1e-5)


@pytest.mark.parametrize("lam", [None, 0.0, 0.9, 1.0])
def test_vtrace_on_policy_is_lambda_return_and_gae(lam):
    """log rho = 0 with thresholds >= 1: vs is the TD(lambda) return, the advantage its GAE."""
    rewards, discounts, values, _, lambdas = _vtrace_inputs(5, lam=lam)
    args = (rewards, discounts, values, np.zeros_like(rewards), lambdas)
    vs, pg = _jax_vtrace(args, (1.0, 1.3, 2.0))
    expected = np.asarray(lambda_returns(*(jnp.asarray(a) for a in (rewards, discounts, values, lambdas))), np.float64)
    np.testing.assert_allclose(vs, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pg, expected - values[:-1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_n_step_returns_are_the_sums_of_n_rewards_cut_at_episode_ends(n):
    """Against the term-by-term sum of eq. 7.1 on the reference trajectory (a termination, a truncation, resets)."""
    trajectory = make_trajectory(seed=n)
    rewards, discounts, _, lambdas = np_transitions(trajectory, 0.9, 1.0)
    steps, batch = rewards.shape
    values = np.random.default_rng(n).normal(size=(steps + 1, batch))
    got = returns.n_step_returns(
        jnp.asarray(rewards, jnp.float32),
        jnp.asarray(discounts, jnp.float32),
        jnp.asarray(values, jnp.float32),
        jnp.asarray(lambdas, jnp.float32),
        n,
    )
    assert got.shape == (steps - n + 1, batch)
    for start in range(steps - n + 1):
        for b in range(batch):
            total, scale = 0.0, 1.0
            for t in range(start, start + n):
                total += scale * rewards[t, b]
                scale *= discounts[t, b]
                if lambdas[t, b] == 0.0 or t == start + n - 1:  # The episode ends at t + 1, or n rewards are in.
                    total += scale * values[t + 1, b]
                    break
            np.testing.assert_allclose(got[start, b], total, rtol=1e-5, atol=1e-5)
