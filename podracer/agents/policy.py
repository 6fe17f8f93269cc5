"""The categorical policy head: sampling, log-probabilities and entropy from logits `[..., A]`."""

import chex
import jax
import jax.numpy as jnp


def sample(key: chex.PRNGKey, logits: chex.Array) -> chex.Array:
    """One action per environment, `[B]`, from logits `[B, A]` and one key per environment `[B]`."""
    chex.assert_rank(logits, 2)
    return jax.vmap(jax.random.categorical)(key, logits).astype(jnp.int32)


def log_prob(logits: chex.Array, action: chex.Array) -> chex.Array:
    """log pi(action) for logits `[..., A]` and integer actions `[...]`."""
    log_probs = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(log_probs, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def entropy(logits: chex.Array) -> chex.Array:
    """Entropy of the categorical distribution, `[...]`."""
    log_probs = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)
