"""The IMPALA loss against an independent NumPy reference (float64), and IMPALA learning Catch."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import podracer
from podracer.agents.algorithms import actor_critic, impala
from tests.helpers import load_config
from tests.references import (
    A,
    close,
    close_loss,
    make_params,
    make_trajectory,
    np_apply,
    np_impala,
    np_transitions,
    unroll_fn,
)

IMPALA_KWARGS = dict(
    gamma=0.9, vtrace_lambda=0.8, clip_rho_threshold=1.0, clip_pg_rho_threshold=1.0, value_cost=0.7, entropy_cost=0.05
)
IMPALA_CASES = [
    IMPALA_KWARGS,
    dict(IMPALA_KWARGS, vtrace_lambda=1.0, clip_rho_threshold=1.5, clip_pg_rho_threshold=0.7),
]


@jax.jit
def _impala_loss_and_grad(params, trajectory, kwargs):
    """One compilation for every case: the hyperparameters are traced scalars."""
    loss_fn = functools.partial(impala.loss, unroll_fn=unroll_fn, **kwargs)
    return jax.value_and_grad(loss_fn, has_aux=True)(params, trajectory)


@pytest.mark.parametrize("kwargs", IMPALA_CASES)
def test_impala_loss_metrics_and_gradient_match_numpy(kwargs):
    params, trajectory = make_params(1), make_trajectory(1)
    (total, metrics), grads = _impala_loss_and_grad(params, trajectory, kwargs)
    np_total, np_metrics, np_grads, log_rhos = np_impala(params, trajectory, **kwargs)
    # The data are off-policy enough that the importance weights are clipped at some valid steps and not at others.
    _, _, valid, _ = np_transitions(trajectory, kwargs["gamma"], kwargs["vtrace_lambda"])
    ratio = np.exp(log_rhos[valid > 0])
    for threshold in (kwargs["clip_rho_threshold"], kwargs["clip_pg_rho_threshold"]):
        assert np.any(ratio > threshold) and np.any(ratio < threshold)
    close_loss(total, metrics, np_total, np_metrics)
    for name, value in np_grads.items():
        close(grads[name], value, rtol=1e-4, atol=1e-6)


def test_impala_masked_step_does_not_matter():
    """The action and behaviour on the LAST -> FIRST reset step (t = 2, column 0) never enter the loss."""
    params, trajectory = make_params(), make_trajectory()
    (base, _), base_grads = _impala_loss_and_grad(params, trajectory, IMPALA_KWARGS)
    logits = trajectory.extras["logits"]
    moved_trajectory = trajectory.replace(
        action=trajectory.action.at[2, 0].set((trajectory.action[2, 0] + 1) % A),
        extras={"logits": logits.at[2, 0].add(jnp.array([3.0, -2.0, 1.0]))},
    )
    (moved, _), moved_grads = _impala_loss_and_grad(params, moved_trajectory, IMPALA_KWARGS)
    close(moved, float(base), rtol=1e-6, atol=1e-7)
    for name in params:
        close(moved_grads[name], np.asarray(base_grads[name], np.float64), rtol=1e-6, atol=1e-7)


def test_impala_on_policy_equals_actor_critic_with_td_lambda():
    """Behaviour = current policy (as in Anakin): V-trace reduces to TD(lambda), IMPALA to actor-critic."""
    params, trajectory = make_params(2), make_trajectory(2)
    logits, _ = np_apply(params, trajectory.timestep.observation)
    trajectory = trajectory.replace(extras={"logits": jnp.asarray(logits[:-1], jnp.float32)})
    (_, metrics), grads = _impala_loss_and_grad(params, trajectory, IMPALA_KWARGS)
    ac_kwargs = {k: IMPALA_KWARGS[k] for k in ("gamma", "value_cost", "entropy_cost")}
    ac_loss = functools.partial(
        actor_critic.loss, unroll_fn=unroll_fn, td_lambda=IMPALA_KWARGS["vtrace_lambda"], **ac_kwargs
    )
    (_, ac_metrics), ac_grads = jax.jit(jax.value_and_grad(ac_loss, has_aux=True))(params, trajectory)
    close(metrics["mean_rho"], 1.0, rtol=1e-6)
    for name, value in ac_metrics.items():
        close(metrics[name], float(value), rtol=1e-5, atol=1e-6)
    for name in params:
        close(grads[name], np.asarray(ac_grads[name], np.float64), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Learning.


@pytest.mark.slow
@pytest.mark.learning("last 100 episodes", at_least=0.9, random=-0.6)
def test_impala_learns_catch(learning):
    # 8 dispatches of 20 updates of 64 x 16 steps.
    fields = {"num_envs": 64, "updates_per_dispatch": 20, "total_steps": 8 * 20 * 64 * 16, "seed": learning.seed}
    config = load_config("anakin_catch", fields)
    config.agent = podracer.defaults("impala").agent
    history = podracer.train(config).history
    assert history[0]["mean_episode_return"] < 0.5  # It did not start solved.
    learning.check(podracer.recent_return(history))
    assert abs(history[-1]["mean_rho"] - 1.0) < 1e-3  # Anakin acts with the learner's parameters.
