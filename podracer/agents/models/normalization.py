"""Running statistics for observation normalisation and reward scaling, kept in the learner state.

Both are updated at the start of `learn` from the trajectory it receives, with
moments summed over every device on `axis_name` (which spans every process of
the job), so all replicas hold the same statistics. Observations are
normalised per feature, `clip((o - mean) / sqrt(var + eps), -10, 10)`, by the
same function in `act` and in `learn` (`networks.NetworkParams.apply`).
Rewards are divided by the running standard deviation of the discounted
return, the scaling MuJoCo PPO relies on (Engstrom et al. 2020, "Implementation
Matters in Deep Policy Gradients", Sec. 3; gym's `NormalizeReward`). Where gym
accumulates the return forward across rollouts in each environment, we
accumulate it backward within each trajectory (the return-to-go inside the
unroll), so no per-environment state has to live in the replicated learner
state; the scale differs by a constant factor near 1 for unrolls much longer
than the horizon 1 / (1 - gamma).

Statistics are merged with the parallel rule of Chan et al. (1979): a batch of
n values with mean m_b and variance v_b joins n_a values with (m_a, v_a) as
mean m_a + d n / N and variance (n_a v_a + n v_b + d^2 n_a n / N) / N, where
d = m_b - m_a and N = n_a + n.
"""

from typing import Any

import chex
import jax
import jax.numpy as jnp
from flax import struct

from podracer.devices import collectives
from podracer.envs.actions import ACTION_MASK, action_mask, network_input

EPSILON = 1e-8
OBSERVATION_CLIP = 10.0


@struct.dataclass
class RunningStatistics:
    """Count, mean and variance of a stream of arrays (a pytree of them), per element."""

    count: chex.Array  # Scalar float32: values seen so far (per element).
    mean: Any
    variance: Any


def init(example: Any) -> RunningStatistics:
    """Empty statistics for values shaped like `example` (a pytree of arrays or specs, no batch axis)."""
    zeros = jax.tree.map(lambda x: jnp.zeros(x.shape, jnp.float32), example)
    return RunningStatistics(jnp.zeros((), jnp.float32), zeros, jax.tree.map(jnp.ones_like, zeros))


def update(
    statistics: RunningStatistics,
    values: Any,
    num_batch_dims: int,
    axis_name: collectives.AxisName,
    mask: chex.Array | None = None,
) -> RunningStatistics:
    """The statistics with `values` (leaves `[*batch, ...]`) of every device on `axis_name` merged in.

    `mask` (`[*batch]`, 1 or 0) leaves out the values where it is 0.
    """
    batch_axes = tuple(range(num_batch_dims))
    values = jax.tree.map(lambda x: x.astype(jnp.float32), values)
    if mask is None:
        mask = jnp.ones(jax.tree.leaves(values)[0].shape[:num_batch_dims], jnp.float32)

    def masked_sum(x):
        return jnp.sum(mask.reshape(mask.shape + (1,) * (x.ndim - mask.ndim)) * x, batch_axes)

    count, sums = collectives.total((jnp.sum(mask), jax.tree.map(masked_sum, values)), axis_name)
    batch_mean = jax.tree.map(lambda s: s / jnp.maximum(count, 1.0), sums)
    squared_deviations = jax.tree.map(lambda x, m: masked_sum((x - m) ** 2), values, batch_mean)
    batch_variance = jax.tree.map(
        lambda s: s / jnp.maximum(count, 1.0), collectives.total(squared_deviations, axis_name)
    )
    total = statistics.count + count
    merged = jnp.maximum(total, 1.0)  # Only 0 when nothing was ever seen; then the batch adds nothing.

    def merge_mean(mean, batch):
        return mean + (batch - mean) * count / merged

    def merge_variance(variance, mean, batch_var, batch):
        delta = batch - mean
        pooled = (
            statistics.count * variance + count * batch_var + delta**2 * statistics.count * count / merged
        ) / merged
        return jnp.where(total > 0, pooled, variance)

    return RunningStatistics(
        count=total,
        mean=jax.tree.map(merge_mean, statistics.mean, batch_mean),
        variance=jax.tree.map(merge_variance, statistics.variance, statistics.mean, batch_variance, batch_mean),
    )


def normalize_observation(statistics: RunningStatistics, observation: Any) -> Any:
    """clip((o - mean) / sqrt(var + eps), -10, 10) per feature; leaves may carry any leading batch axes.

    An action mask (`podracer.envs.actions`) passes through as it is: it says which actions are legal; a game's
    state is left out, as no network reads it.
    """
    normalized = jax.tree.map(
        lambda o, m, v: jnp.clip(
            (o.astype(jnp.float32) - m) * jax.lax.rsqrt(v + EPSILON), -OBSERVATION_CLIP, OBSERVATION_CLIP
        ),
        *(network_input(tree) for tree in (observation, statistics.mean, statistics.variance)),
    )
    mask = action_mask(observation)
    return normalized if mask is None else {**normalized, ACTION_MASK: mask}


def scale_rewards(statistics: RunningStatistics, rewards: chex.Array) -> chex.Array:
    """Rewards divided by the running standard deviation of the discounted return."""
    return rewards * jax.lax.rsqrt(statistics.variance + EPSILON)


def returns_to_go(rewards: chex.Array, discounts: chex.Array) -> chex.Array:
    """G_t = r_t + discount_t G_{t+1} within the unroll, with G_T = 0; inputs `[T, B]`."""
    chex.assert_equal_shape([rewards, discounts])

    def step(following, reward_and_discount):
        reward, discount = reward_and_discount
        value = reward + discount * following
        return value, value

    _, returns = jax.lax.scan(step, jnp.zeros_like(rewards[0]), (rewards, discounts), reverse=True)
    return returns
