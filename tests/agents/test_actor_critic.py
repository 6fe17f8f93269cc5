"""The actor-critic loss against an independent NumPy reference (float64): loss, metrics and gradient."""

import functools

import jax
import jax.numpy as jnp
import pytest

from podracer.agents.algorithms import actor_critic
from tests.references import A, close, close_loss, make_params, make_trajectory, np_actor_critic, unroll_fn

AC_KWARGS = dict(gamma=0.9, td_lambda=0.8, value_cost=0.7, entropy_cost=0.05)


@jax.jit
def _ac_loss(params, trajectory, td_lambda=AC_KWARGS["td_lambda"], reward_clip=0.0):
    """One compilation for every td_lambda and reward_clip: they are traced scalars here."""
    kwargs = dict(AC_KWARGS, td_lambda=td_lambda)
    return actor_critic.loss(params, trajectory, unroll_fn=unroll_fn, reward_clip=reward_clip, **kwargs)


@pytest.mark.parametrize("td_lambda, reward_clip", [(0.0, 0.0), (0.8, 0.0), (1.0, 0.0), (0.8, 0.5)])
def test_actor_critic_loss_and_metrics_match_numpy(td_lambda, reward_clip):
    kwargs = dict(AC_KWARGS, td_lambda=td_lambda)
    params, trajectory = make_params(), make_trajectory()
    total, metrics = _ac_loss(params, trajectory, jnp.float32(td_lambda), jnp.float32(reward_clip))
    np_total, np_metrics, _ = np_actor_critic(params, trajectory, reward_clip=reward_clip, **kwargs)
    close_loss(total, metrics, np_total, np_metrics)


def test_reward_clip_changes_the_loss_of_the_test_data():
    """The test data have rewards beyond +-0.5, so the clipped case above is not the unclipped one again."""
    params, trajectory = make_params(), make_trajectory()
    unclipped = np_actor_critic(params, trajectory, **AC_KWARGS)[0]
    clipped = np_actor_critic(params, trajectory, reward_clip=0.5, **AC_KWARGS)[0]
    assert abs(clipped - unclipped) > 1e-3


def test_actor_critic_gradient_matches_numpy_policy_gradient_and_critic_formulas():
    params, trajectory = make_params(1), make_trajectory(1)
    loss_fn = functools.partial(actor_critic.loss, unroll_fn=unroll_fn, **AC_KWARGS)
    grads = jax.jit(jax.grad(lambda p, t: loss_fn(p, t)[0]))(params, trajectory)
    _, _, np_grads = np_actor_critic(params, trajectory, **AC_KWARGS)
    for name, value in np_grads.items():
        close(grads[name], value, rtol=1e-4, atol=1e-6)


def test_actor_critic_masked_step_does_not_matter():
    """The action and behaviour on the LAST -> FIRST reset step never enter the loss."""
    params, trajectory = make_params(), make_trajectory()
    td_lambda = jnp.float32(AC_KWARGS["td_lambda"])
    base = _ac_loss(params, trajectory, td_lambda)[0]
    action = trajectory.action.at[2, 0].set((trajectory.action[2, 0] + 1) % A)
    moved = _ac_loss(params, trajectory.replace(action=action), td_lambda)[0]
    close(moved, float(base), rtol=1e-6, atol=1e-7)
