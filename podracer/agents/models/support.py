"""Scalars as categorical distributions over a transformed support, as MuZero predicts values and rewards.

MuZero (Schrittwieser et al. 2020, Appendix F "Network Architecture") does
not regress values and rewards directly: it squashes a scalar x with the
invertible transform of Pohlen et al. (2018, "Observe and Look Further",
Proposition A.2),

    h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x,        eps = 0.001,

and represents h(x) as a distribution over the integers -S..S (2S + 1 bins):
the two bins around h(x) share the probability so that the distribution's
mean is h(x) (`to_categorical`, the "two-hot" projection). A network predicts
logits over the bins, trained by cross-entropy against that projection, and
its scalar is h^-1 of the mean (`to_scalar`), with h^-1 in closed form (Pohlen
et al. 2018, Proposition A.2):

    h^-1(y) = sign(y) (((sqrt(1 + 4 eps (|y| + 1 + eps)) - 1) / (2 eps))^2 - 1).
"""

import chex
import jax
import jax.numpy as jnp

EPSILON = 0.001


def transform(x: chex.Array) -> chex.Array:
    """h(x), which grows like sqrt(|x|): large returns fit a small support."""
    return jnp.sign(x) * (jnp.sqrt(jnp.abs(x) + 1.0) - 1.0) + EPSILON * x


def inverse_transform(y: chex.Array) -> chex.Array:
    """h^-1(y), so that h^-1(h(x)) = x.

    Written as (root - 1)(root + 1) with sqrt(1 + a) - 1 = a / (sqrt(1 + a) + 1),
    which avoids float32's cancellation near y = 0 (a 1e-5 error there otherwise).
    """
    a = 4.0 * EPSILON * (jnp.abs(y) + 1.0 + EPSILON)
    root_minus_one = (a / (jnp.sqrt(1.0 + a) + 1.0) - 2.0 * EPSILON) / (2.0 * EPSILON)
    return jnp.sign(y) * root_minus_one * (root_minus_one + 2.0)


def bins(support_size: int) -> int:
    """The number of bins of the support -S..S."""
    return 2 * support_size + 1


def to_categorical(x: chex.Array, support_size: int) -> chex.Array:
    """The two-hot distribution `[..., 2S + 1]` over -S..S whose mean is h(x), clipped to the support."""
    y = jnp.clip(transform(x), -support_size, support_size)
    below = jnp.floor(y)
    upper_weight = y - below
    index = (below + support_size).astype(jnp.int32)
    size = bins(support_size)
    lower = jax.nn.one_hot(index, size) * (1.0 - upper_weight)[..., None]
    upper = jax.nn.one_hot(jnp.minimum(index + 1, size - 1), size) * upper_weight[..., None]
    return lower + upper


def to_scalar(logits: chex.Array) -> chex.Array:
    """h^-1 of the mean of softmax(logits) over the support -S..S that `logits [..., 2S + 1]` cover."""
    size = logits.shape[-1]
    chex.assert_equal(size % 2, 1)
    support = jnp.arange(size, dtype=jnp.float32) - (size - 1) // 2
    return inverse_transform(jnp.sum(jax.nn.softmax(logits, axis=-1) * support, axis=-1))
