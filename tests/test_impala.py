"""V-trace and the IMPALA loss against independent NumPy references (float64), and IMPALA learning Catch."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import actor_critic, impala, returns
from podracer.anakin import train
from podracer.config import defaults
from tests.helpers import load_config
from tests.test_losses import (
    A,
    _close,
    _np_apply,
    _np_log_softmax,
    _np_policy_gradient,
    _np_transitions,
    _params,
    _trajectory,
    apply_fn,
)

vtrace = jax.jit(returns.vtrace)  # Thresholds are traced: one compilation per shape.
lambda_returns = jax.jit(returns.lambda_returns)

# ---------------------------------------------------------------------------------------------
# NumPy references for V-trace.


def _np_vtrace_sum_form(rewards, discounts, values, log_rhos, lambdas, clip_rho, clip_pg_rho, clip_c):
    """Espeholt et al. 2018, eq. (1), term by term, for every column:

    v_s = V(x_s) + sum_{t=s}^{T-1} (prod_{i=s}^{t-1} d_i c_i) delta_t,  delta_t = rho_t (r_t + d_t V(x_{t+1}) - V(x_t)),

    with rho_t = min(clip_rho, pi/mu), c_i = lambda_i min(clip_c, pi/mu). With a constant discount gamma the
    product is the paper's gamma^{t-s} prod c_i. The policy-gradient advantage (Section 4.2, with lambda as in
    rlax) uses q_s = r_s + d_s (lambda_s v_{s+1} + (1 - lambda_s) V(x_{s+1})), with v_T = V(x_T).
    """
    r, d, v, log_rho, lam = (np.asarray(x, np.float64) for x in (rewards, discounts, values, log_rhos, lambdas))
    num_steps = r.shape[0]
    ratio = np.exp(log_rho)
    rho = np.minimum(clip_rho, ratio)
    c = lam * np.minimum(clip_c, ratio)
    delta = rho * (r + d * v[1:] - v[:-1])
    vs = np.zeros_like(r)
    for s in range(num_steps):
        vs[s] = v[s] + sum(np.prod(d[s:t] * c[s:t], axis=0) * delta[t] for t in range(s, num_steps))
    vs_next = np.concatenate([vs[1:], v[-1:]])
    q = r + d * (lam * vs_next + (1 - lam) * v[1:])
    return vs, np.minimum(clip_pg_rho, ratio) * (q - v[:-1])


def _np_vtrace_recursive(rewards, discounts, values, log_rhos, lambdas, clip_rho, clip_pg_rho, clip_c):
    """Remark 1 of the paper: v_s = V(x_s) + delta_s + d_s c_s (v_{s+1} - V(x_{s+1})), v_T = V(x_T)."""
    r, d, v, log_rho, lam = (np.asarray(x, np.float64) for x in (rewards, discounts, values, log_rhos, lambdas))
    num_steps = r.shape[0]
    vs = np.zeros_like(r)
    pg_advantages = np.zeros_like(r)
    next_vs = v[num_steps].copy()
    for s in reversed(range(num_steps)):
        ratio = np.exp(log_rho[s])
        delta = np.minimum(clip_rho, ratio) * (r[s] + d[s] * v[s + 1] - v[s])
        q = r[s] + d[s] * (lam[s] * next_vs + (1 - lam[s]) * v[s + 1])
        pg_advantages[s] = np.minimum(clip_pg_rho, ratio) * (q - v[s])
        vs[s] = v[s] + delta + d[s] * lam[s] * np.minimum(clip_c, ratio) * (next_vs - v[s + 1])
        next_vs = vs[s]
    return vs, pg_advantages


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
    expected_vs, expected_pg = _np_vtrace_sum_form(*args, *clips)
    vs, pg = _jax_vtrace(args, clips)
    np.testing.assert_allclose(vs, expected_vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pg, expected_pg, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", [2, 3])
@pytest.mark.parametrize("clips", CLIPS)
def test_vtrace_with_terminations_and_cuts_matches_both_numpy_forms(seed, clips):
    args = _vtrace_inputs(seed)
    expected_vs, expected_pg = _np_vtrace_recursive(*args, *clips)
    sum_vs, sum_pg = _np_vtrace_sum_form(*args, *clips)
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
    for got, expected in zip(moved, base):
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


# ---------------------------------------------------------------------------------------------
# The IMPALA loss on the small trajectory of tests/test_losses.py.

IMPALA_KWARGS = dict(
    gamma=0.9, vtrace_lambda=0.8, clip_rho_threshold=1.0, clip_pg_rho_threshold=1.0, value_cost=0.7, entropy_cost=0.05
)
IMPALA_CASES = [
    IMPALA_KWARGS,
    dict(IMPALA_KWARGS, vtrace_lambda=1.0, clip_rho_threshold=1.5, clip_pg_rho_threshold=0.7),
]


def _np_impala(params, trajectory, *, gamma, vtrace_lambda, clip_rho_threshold, clip_pg_rho_threshold, value_cost,
               entropy_cost):
    """Loss, metrics and the analytic gradient w.r.t. the linear network's params, float64.

    Policy gradient (Section 4.2): -rho_pg A grad log pi with the advantages and the importance weights constant;
    value gradient: (v - vs) grad v with vs constant.
    """
    obs = np.asarray(trajectory.timestep.observation, np.float64)
    logits, values = _np_apply(params, obs)
    rewards, discounts, valid, lambdas = _np_transitions(trajectory, gamma, vtrace_lambda)
    action = np.asarray(trajectory.action)
    log_probs = np.take_along_axis(_np_log_softmax(logits[:-1]), action[..., None], -1)[..., 0]
    behaviour = _np_log_softmax(np.asarray(trajectory.behaviour_logits, np.float64))
    log_rhos = log_probs - np.take_along_axis(behaviour, action[..., None], -1)[..., 0]
    vs, pg_advantages = _np_vtrace_recursive(
        rewards, discounts, values, log_rhos, lambdas, clip_rho_threshold, clip_pg_rho_threshold, 1.0
    )
    total, metrics, grads = _np_policy_gradient(obs, logits, values, action, valid, pg_advantages, vs,
                                                value_cost=value_cost, entropy_cost=entropy_cost)
    metrics["mean_rho"] = (valid * np.minimum(clip_rho_threshold, np.exp(log_rhos))).sum() / valid.sum()
    return total, metrics, grads, log_rhos


@jax.jit
def _impala_loss_and_grad(params, trajectory, kwargs):
    """One compilation for every case: the hyperparameters are traced scalars."""
    loss_fn = functools.partial(impala.loss, apply_fn=apply_fn, **kwargs)
    return jax.value_and_grad(loss_fn, has_aux=True)(params, trajectory)


@pytest.mark.parametrize("kwargs", IMPALA_CASES)
def test_impala_loss_metrics_and_gradient_match_numpy(kwargs):
    params, trajectory = _params(1), _trajectory(1)
    (total, metrics), grads = _impala_loss_and_grad(params, trajectory, kwargs)
    np_total, np_metrics, np_grads, log_rhos = _np_impala(params, trajectory, **kwargs)
    # The data are off-policy enough that the importance weights are clipped at some valid steps and not at others.
    _, _, valid, _ = _np_transitions(trajectory, kwargs["gamma"], kwargs["vtrace_lambda"])
    ratio = np.exp(log_rhos[valid > 0])
    for threshold in (kwargs["clip_rho_threshold"], kwargs["clip_pg_rho_threshold"]):
        assert np.any(ratio > threshold) and np.any(ratio < threshold)
    _close(total, np_total)
    assert set(metrics) == set(np_metrics)
    for name, value in np_metrics.items():
        _close(metrics[name], value, rtol=1e-5, atol=1e-6)
    for name, value in np_grads.items():
        _close(grads[name], value, rtol=1e-4, atol=1e-6)


def test_impala_masked_step_does_not_matter():
    """The action and behaviour on the LAST -> FIRST reset step (t = 2, column 0) never enter the loss."""
    params, trajectory = _params(), _trajectory()
    (base, _), base_grads = _impala_loss_and_grad(params, trajectory, IMPALA_KWARGS)
    moved_trajectory = trajectory.replace(
        action=trajectory.action.at[2, 0].set((trajectory.action[2, 0] + 1) % A),
        behaviour_logits=trajectory.behaviour_logits.at[2, 0].add(jnp.array([3.0, -2.0, 1.0])),
    )
    (moved, _), moved_grads = _impala_loss_and_grad(params, moved_trajectory, IMPALA_KWARGS)
    _close(moved, float(base), rtol=1e-6, atol=1e-7)
    for name in params:
        _close(moved_grads[name], np.asarray(base_grads[name], np.float64), rtol=1e-6, atol=1e-7)


def test_impala_on_policy_equals_actor_critic_with_td_lambda():
    """Behaviour = current policy (as in Anakin): V-trace reduces to TD(lambda), IMPALA to actor-critic."""
    params, trajectory = _params(2), _trajectory(2)
    logits, _ = _np_apply(params, trajectory.timestep.observation)
    trajectory = trajectory.replace(behaviour_logits=jnp.asarray(logits[:-1], jnp.float32))
    (_, metrics), grads = _impala_loss_and_grad(params, trajectory, IMPALA_KWARGS)
    ac_kwargs = {k: IMPALA_KWARGS[k] for k in ("gamma", "value_cost", "entropy_cost")}
    ac_loss = functools.partial(actor_critic.loss, apply_fn=apply_fn, td_lambda=IMPALA_KWARGS["vtrace_lambda"],
                                **ac_kwargs)
    (_, ac_metrics), ac_grads = jax.jit(jax.value_and_grad(ac_loss, has_aux=True))(params, trajectory)
    _close(metrics["mean_rho"], 1.0, rtol=1e-6)
    for name, value in ac_metrics.items():
        _close(metrics[name], float(value), rtol=1e-5, atol=1e-6)
    for name in params:
        _close(grads[name], np.asarray(ac_grads[name], np.float64), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Learning.


@pytest.mark.slow
def test_impala_learns_catch():
    config = load_config("anakin_catch", total_steps=8 * 20 * 64 * 16)  # 8 dispatches of 20 updates.
    config.agent = defaults("impala").agent
    _, history = train(config, show_progress=False)
    assert history[-1]["mean_episode_return"] >= 0.9
    assert history[0]["mean_episode_return"] < 0.5  # It did not start solved.
    assert abs(history[-1]["mean_rho"] - 1.0) < 1e-3  # Anakin acts with the learner's parameters.
