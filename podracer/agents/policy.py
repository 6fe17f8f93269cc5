"""Categorical policy helpers shared by acting and by the losses."""

import chex
import jax
import jax.numpy as jnp


def log_prob(logits: chex.Array, action: chex.Array) -> chex.Array:
    """log pi(action) for logits `[..., A]` and integer actions `[...]`."""
    log_probs = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(log_probs, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def entropy(logits: chex.Array) -> chex.Array:
    """Entropy of the categorical distribution, `[...]`."""
    log_probs = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)


def sample_with_noise(logits: chex.Array, gumbel_noise: chex.Array) -> chex.Array:
    """Gumbel-max sampling: argmax(logits + g) with g ~ Gumbel(0, 1) is a draw from softmax(logits).

    Taking pre-drawn noise lets an actor draw the noise for a whole unroll in one
    vectorised call instead of splitting a key at every step.
    """
    chex.assert_equal_shape([logits, gumbel_noise])
    return jnp.argmax(logits + gumbel_noise, axis=-1).astype(jnp.int32)
