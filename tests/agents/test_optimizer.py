"""The gradient step's slicing on CPU: how many slices, and that a sliced gradient is the whole batch's."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents.algorithms import actor_critic, ppo
from podracer.agents.learning import optimizer
from tests.references import B, close, make_params, make_trajectory, unroll_fn


@pytest.mark.parametrize(
    "shapes, axis, expected",
    [
        ({"observation": (1, 65536, 4), "action": (1, 65536)}, 1, 32),  # A PPO minibatch of 2,048 x 128 / 4.
        ({"observation": (17, 1024, 10, 5), "action": (16, 1024)}, 1, 16),  # 17 rows per environment.
        ({"observation": (17, 64, 10, 5), "action": (16, 64)}, 1, 1),  # 1,088 rows fit in one slice.
        ({"observation": (3, 1000)}, 1, 2),  # Equal slices: 2 of 500 environments, not 3 of 333.
        ({"observation": (4099,)}, 0, 1),  # A prime: slices of one row would be slower than the whole.
        ({"observation": (4097, 3, 4)}, 1, 3),  # As close as 3 environments of 4,097 steps come.
    ],
)
def test_num_chunks_is_the_fewest_equal_slices_within_chunk_rows(shapes, axis, expected):
    batch = {name: np.zeros(shape, np.float32) for name, shape in shapes.items()}
    assert optimizer.CHUNK_ROWS == 2048
    assert optimizer.num_chunks(batch, axis) == expected


def _sliced_and_whole(loss_fn, batch, axis, chunks):
    sliced = jax.jit(optimizer.chunked_grad(axis, chunks)(loss_fn))(make_params(3), batch)
    whole = jax.jit(jax.grad(loss_fn, has_aux=True))(make_params(3), batch)
    return sliced, whole


def test_a_gradient_in_slices_of_environments_is_the_whole_trajectory_gradient():
    """Actor-critic's loss is a mean over environments: one slice per environment gives its gradient and metrics."""
    loss_fn = functools.partial(
        actor_critic.loss, unroll_fn=unroll_fn, gamma=0.9, td_lambda=0.8, value_cost=0.7, entropy_cost=0.05
    )
    (grads, metrics), (whole_grads, whole_metrics) = _sliced_and_whole(loss_fn, make_trajectory(3), 1, B)
    for name, value in whole_grads.items():
        close(grads[name], np.asarray(value, np.float64), rtol=1e-5, atol=1e-6)
    for name, value in whole_metrics.items():
        close(metrics[name], float(value), rtol=1e-5, atol=1e-6)


def test_a_gradient_in_slices_of_transitions_is_the_whole_minibatch_gradient():
    """A feed-forward PPO minibatch, `[1, n]` lone transitions, sliced along its transitions as `ppo.learn` does."""
    rng = np.random.default_rng(3)
    shape = (1, 24)
    batch = ppo.Samples(
        observation=jnp.asarray(rng.normal(size=shape + (4,)), jnp.float32),
        first=jnp.asarray(rng.uniform(size=shape) < 0.2),
        action=jnp.asarray(rng.integers(0, 3, shape), jnp.int32),
        old_log_prob=jnp.asarray(np.log(1 / 3) + 0.3 * rng.normal(size=shape), jnp.float32),
        old_value=jnp.asarray(rng.normal(size=shape), jnp.float32),
        advantage=jnp.asarray(rng.normal(size=shape), jnp.float32),
        target_return=jnp.asarray(rng.normal(size=shape), jnp.float32),
        valid=jnp.asarray(rng.uniform(size=shape) > 0.2, jnp.float32),
        state=(),
    )
    loss_fn = functools.partial(
        ppo.loss, unroll_fn=unroll_fn, clip_epsilon=0.2, clip_value_loss=True, value_cost=0.5, entropy_cost=0.01
    )
    (grads, metrics), (whole_grads, whole_metrics) = _sliced_and_whole(loss_fn, batch, 1, 4)
    for name, value in whole_grads.items():
        close(grads[name], np.asarray(value, np.float64), rtol=1e-5, atol=1e-6)
    for name, value in whole_metrics.items():
        close(metrics[name], float(value), rtol=1e-5, atol=1e-6)
