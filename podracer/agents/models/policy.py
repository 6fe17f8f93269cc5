"""Policy heads: sampling, log-probabilities and entropy of the distribution a network's policy outputs describe.

A head's outputs are a dict of arrays, and the same dict is what `act` keeps
as the trajectory's `extras`, so the behaviour policy can be rebuilt at
learning time:

- categorical, for a `DiscreteArray` action spec: `{"logits": [..., A]}`;
- diagonal Gaussian, for a `BoundedArray` action spec: `{"mean": [..., D],
  "log_std": [..., D]}`, with a state-independent learned log-std (as in
  CleanRL's and PureJaxRL's continuous PPO). Samples are unbounded; they are
  clipped to the action bounds only where they enter the environment
  (`podracer.envs.actions.clip_to_spec`), so the log-probabilities of the
  trajectory's actions stay those of the distribution that drew them.

Every function takes the outputs dict and picks the head from its keys.

Where the environment says which actions are legal (an action mask in the
observation, `podracer.envs.actions`), the network passes its logits through
`mask_illegal` first: an illegal action's logit becomes the lowest float, so
sampling never draws it, its probability is 0 and its term of the entropy 0.
"""

import math
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

from podracer.config.errors import ConfigError

CATEGORICAL_KEYS = frozenset({"logits"})
GAUSSIAN_KEYS = frozenset({"mean", "log_std"})
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def is_gaussian(outputs: dict) -> bool:
    """Whether `outputs` describe a diagonal Gaussian (else a categorical); anything else is an error."""
    keys = frozenset(outputs)
    if keys not in (CATEGORICAL_KEYS, GAUSSIAN_KEYS):
        raise ValueError(f"policy outputs must have keys {set(CATEGORICAL_KEYS)} or {set(GAUSSIAN_KEYS)}, got {keys}")
    return keys == GAUSSIAN_KEYS


def sample(key: chex.PRNGKey, outputs: dict) -> chex.Array:
    """One action per environment from outputs `[B, ...]` and one key per environment `[B]`.

    Categorical: int32 `[B]`. Gaussian: float32 `[B, D]`, mean + std * N(0, 1), unclipped.
    """
    if is_gaussian(outputs):
        mean, log_std = outputs["mean"], outputs["log_std"]
        chex.assert_rank(mean, 2)
        noise = jax.vmap(lambda k: jax.random.normal(k, mean.shape[1:], mean.dtype))(key)
        return mean + jnp.exp(log_std) * noise
    chex.assert_rank(outputs["logits"], 2)
    return jax.vmap(jax.random.categorical)(key, outputs["logits"]).astype(jnp.int32)


def mode(key: chex.PRNGKey, outputs: dict) -> chex.Array:
    """The most likely action per environment, shaped and typed as `sample`'s: argmax of the logits (an illegal
    action's masked logit never wins), or a Gaussian's mean. `key` is unused: it keeps `sample`'s signature, so
    the two are interchangeable wherever an agent chooses its action."""
    del key
    if is_gaussian(outputs):
        chex.assert_rank(outputs["mean"], 2)
        return outputs["mean"]
    chex.assert_rank(outputs["logits"], 2)
    return jnp.argmax(outputs["logits"], axis=-1).astype(jnp.int32)


def log_prob(outputs: dict, action: chex.Array) -> chex.Array:
    """log pi(action), `[...]`: integer actions `[...]` (categorical) or real actions `[..., D]` (Gaussian).

    Gaussian: sum over d of -((a_d - mu_d) / sigma_d)^2 / 2 - log sigma_d - log(2 pi) / 2.
    """
    if is_gaussian(outputs):
        mean, log_std = outputs["mean"], outputs["log_std"]
        z = (action - mean) * jnp.exp(-log_std)
        return jnp.sum(-0.5 * z**2 - log_std - _HALF_LOG_2PI, axis=-1)
    log_probs = jax.nn.log_softmax(outputs["logits"])
    return jnp.take_along_axis(log_probs, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def entropy(outputs: dict) -> chex.Array:
    """Entropy of the distribution, `[...]`. Gaussian: sum over d of log sigma_d + (1 + log(2 pi)) / 2."""
    if is_gaussian(outputs):
        return jnp.sum(outputs["log_std"] + 0.5 + _HALF_LOG_2PI, axis=-1)
    log_probs = jax.nn.log_softmax(outputs["logits"])
    return -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)


def mask_illegal(values: chex.Array, legal: chex.Array | None) -> chex.Array:
    """`values` `[..., A]` (logits or action values) with the illegal actions' entries at the lowest finite float.

    The lowest float rather than -inf: a softmax gives those actions probability
    exactly 0, and neither `log_softmax` nor the entropy's p log p turns into NaN.
    `legal` (bool `[..., A]`) None leaves the values unchanged.
    """
    if legal is None:
        return values
    chex.assert_equal_shape((values, legal))
    return jnp.where(legal, values, jnp.finfo(values.dtype).min)


def head_for(action_spec: Any) -> tuple[str, int]:
    """The policy head an action spec calls for and its size: categorical over n, or Gaussian over D reals."""
    if isinstance(action_spec, specs.DiscreteArray):
        return "categorical", action_spec.num_values
    shape, dtype = getattr(action_spec, "shape", None), getattr(action_spec, "dtype", None)
    if isinstance(action_spec, specs.Array) and len(shape) == 1 and np.issubdtype(dtype, np.floating):
        return "gaussian", shape[0]
    raise ConfigError(
        "env.name",
        f"the actor-critic agents act in a DiscreteArray or a float vector (BoundedArray [D]), not {action_spec}",
        "use an environment with one of those action specs",
    )
