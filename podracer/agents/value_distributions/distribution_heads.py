"""Q-networks that predict a distribution of returns per action: C51's categories, QR-DQN's and IQN's quantiles.

`DistributionalQNetwork` has `QNetwork`'s torsos and recurrent cores
(`network_parts`) and one of three heads (`kind`):

- "categorical" (C51, Bellemare et al. 2017): logits over `num_atoms` atoms
  evenly spaced on [v_min, v_max]; Q(s, a) = sum_i z_i p_i(s, a);
- "quantile" (QR-DQN, Dabney et al. 2018a): `num_atoms` quantiles at the fixed
  fractions (2i + 1) / 2N; Q(s, a) is their mean;
- "implicit" (IQN, Dabney et al. 2018b): a quantile for any fraction tau, the
  state's features multiplied by an embedding of tau (eq. 4,
  phi_j(tau) = ReLU(sum_{i<n} cos(pi i tau) w_ij + b_j), `embedding_size` n).
  Learning samples `num_atoms` fractions per state, uniformly, from the
  "taus" RNG stream; acting takes Q(s, a) as the mean of the quantiles at
  `acting_quantiles` evenly spaced fractions (the midpoints), a fixed
  quadrature of the same mean the paper estimates with K samples, so that a
  greedy action depends on nothing drawn.

With `dueling` each head is split into a value and an advantage stream
combined as V + A - mean_a A (Wang et al. 2016, eq. 9), atom by atom, as
Rainbow does (Hessel et al. 2018, eq. 4). A plain call gives the Q-values
`[T, B, A]`, so acting is DQN's (`exploration`); learning unrolls the torso
and core once (`features`) and applies the head where it needs it
(`distribution`): sampled fractions at the trained steps, the midpoints'
means for the double-Q choice.
"""

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from podracer.agents.models.layers import dense
from podracer.agents.models.network_parts import core_features, head_torso, split_leading, torso_features
from podracer.agents.models.networks import QNetwork
from podracer.agents.models.policy import mask_illegal
from podracer.agents.trajectory import merge_leading_dims
from podracer.agents.value_distributions.distribution_losses import quantile_midpoints
from podracer.envs.actions import action_mask

KINDS = ("categorical", "quantile", "implicit")
TAUS = "taus"
"""The RNG stream IQN draws the quantile fractions of learning from."""


class ValueDistribution(NamedTuple):
    """A distributional network's outputs over a sequence `[T, B, ...]`."""

    q_values: chex.Array  # [T, B, A], illegal actions at the lowest float.
    outputs: chex.Array  # [T, B, A, N]: C51's logits, or the quantiles.
    taus: chex.Array | None  # [T, B, N]: the quantiles' fractions; None for C51.


def categorical_support(num_atoms: int, v_min: float, v_max: float) -> chex.Array:
    """C51's atoms z_i = v_min + i (v_max - v_min) / (N - 1), `[N]`."""
    return jnp.linspace(v_min, v_max, num_atoms, dtype=jnp.float32)


# cos(theta) = sum_k (-1)^k theta^2k / (2k)!, to theta^12: within 7e-9 of cos on [0, pi/2], below float32's rounding.
_COSINE_TAYLOR = tuple((-1) ** k / math.factorial(2 * k) for k in range(7))


def cos_pi(x: jnp.ndarray) -> jnp.ndarray:
    """cos(pi x), elementwise, by arithmetic alone: XLA:CPU calls a scalar cosine for each element of `jnp.cos`.

    x is reduced to r in [-1, 1] (cos(pi x) has period 2), then to |r| or 1 - |r| in [0, 1/2] (cos(pi (1 - a)) =
    -cos(pi a)), where a Taylor polynomial in (pi b)^2 needs seven terms. The result is within 2e-7 of float64's
    cos(pi x) for x up to 64; reducing x before multiplying by pi, it is also closer than `jnp.cos(pi * x)`, which
    rounds pi x first (IQN's i tau against float64's: 6e-6 and 2e-5). On the 2-core AVX2 host, for IQN's
    [768, 64] embeddings: 118 us against 294 us for `jnp.cos`; IQN's CartPole learning test, 30 s against 40.
    """
    r = x - 2.0 * jnp.floor(0.5 * x + 0.5)
    a = jnp.abs(r)
    far = a > 0.5
    theta_squared = jnp.square(jnp.pi * jnp.where(far, 1.0 - a, a))
    polynomial = _COSINE_TAYLOR[-1]
    for coefficient in _COSINE_TAYLOR[-2::-1]:
        polynomial = polynomial * theta_squared + coefficient
    return jnp.where(far, -polynomial, polynomial)


class CosineEmbedding(nn.Module):
    """phi(tau) `[..., features]` = ReLU(cos(pi i tau) W + b), i = 0..n-1 (Dabney et al. 2018b, eq. 4)."""

    features: int
    embedding_size: int = 64

    @nn.compact
    def __call__(self, taus: jnp.ndarray) -> jnp.ndarray:
        cosines = cos_pi(jnp.arange(self.embedding_size, dtype=jnp.float32) * taus[..., None])
        return nn.relu(dense(self.features, jnp.sqrt(2.0))(cosines))


class NoisyDense(nn.Module):
    """A dense layer with factorised Gaussian noise on its weights (Fortunato et al. 2018, eqs. 10-11).

    y = x (mu_W + sigma_W * f(e_in) f(e_out)^T) + mu_b + sigma_b * f(e_out), f(e) = sign(e) sqrt(|e|), the
    noise e drawn afresh for each row from that row's key in `noise` (its leading axes; a row's IQN fractions
    share it), so a row's noise is its own whichever batch it is in. The product is computed without forming a
    row's weights: x mu_W + ((x * f(e_in)) sigma_W) * f(e_out). `noise` None is the mean network, mu alone.
    sigma starts at `sigma_zero` / sqrt(inputs) (the paper's factorised initialisation); mu as `dense`'s.
    """

    features: int
    gain: float
    sigma_zero: float = 0.5

    @nn.compact
    def __call__(self, x: jnp.ndarray, noise: jax.Array | None) -> jnp.ndarray:
        inputs = x.shape[-1]
        mean = dense(self.features, self.gain)(x)
        sigma = nn.initializers.constant(self.sigma_zero / jnp.sqrt(inputs))
        sigma_kernel = self.param("sigma_kernel", sigma, (inputs, self.features))
        sigma_bias = self.param("sigma_bias", sigma, (self.features,))
        if noise is None:
            return mean
        scaled = lambda e: jnp.sign(e) * jnp.sqrt(jnp.abs(e))  # noqa: E731
        draws = jax.vmap(lambda key: jax.random.normal(key, (inputs + self.features,)))(noise.reshape(-1))
        draws = scaled(draws).reshape(noise.shape + (1,) * (x.ndim - noise.ndim - 1) + (-1,))
        noise_in, noise_out = draws[..., :inputs], draws[..., inputs:]
        return mean + (x * noise_in) @ sigma_kernel * noise_out + sigma_bias * noise_out


BODY_FIELDS = ("hidden_sizes", "activation", "torso", "channels", "num_blocks", "hidden_size", "core", "core_size")
HEAD_FIELDS = ("kind", "num_atoms", "v_min", "v_max", "acting_quantiles", "embedding_size", "dueling", "noisy_sigma")


class QBody(nn.Module):
    """`QNetwork`'s torso and core: `(state, features [T, B, F])` over a sequence."""

    hidden_sizes: Sequence[int]
    activation: str
    torso: str
    channels: Sequence[int]
    num_blocks: int
    hidden_size: int
    core: str
    core_size: int
    layer_norm: bool

    @nn.compact
    def __call__(self, state: Any, observation: Any, first: jnp.ndarray) -> tuple[Any, jnp.ndarray]:
        leading = first.shape
        observation = merge_leading_dims(observation, len(leading))
        features, _ = torso_features(self, observation, shared=True)
        state, features = core_features(self, state, features, first)
        return state, split_leading(features, leading)


class DistributionHead(nn.Module):
    """Each action's return distribution, as a `ValueDistribution`, from features `[..., F]`."""

    action_size: int
    kind: str
    num_atoms: int
    v_min: float
    v_max: float
    acting_quantiles: int
    embedding_size: int
    dueling: bool
    noisy_sigma: float
    head_hidden_sizes: Sequence[int]
    activation: str
    layer_norm: bool

    @nn.compact
    def __call__(
        self, features: jnp.ndarray, legal: jnp.ndarray | None, sampled: bool, noise: jax.Array | None = None
    ) -> ValueDistribution:
        """`sampled`: IQN's `num_atoms` fractions drawn from the "taus" stream (learning), else its
        `acting_quantiles` midpoints (acting, and the double-Q choice). `noise`: a key per row for the noisy
        output layers (`noisy_sigma` > 0), None for their mean."""
        taus = None
        if self.kind == "implicit":
            count = self.num_atoms if sampled else self.acting_quantiles
            shape = features.shape[:-1] + (count,)
            midpoints = jnp.broadcast_to(quantile_midpoints(count), shape)
            taus = jax.random.uniform(self.make_rng(TAUS), shape) if sampled else midpoints
            embedded = features[..., None, :] * CosineEmbedding(features.shape[-1], self.embedding_size)(taus)
            outputs = jnp.swapaxes(self._stream(embedded, 1, noise)[..., 0], -1, -2)  # [..., N, A, 1] -> [..., A, N].
        else:
            outputs = self._stream(features, self.num_atoms, noise)  # [..., A, N]
            if self.kind == "quantile":
                taus = jnp.broadcast_to(quantile_midpoints(self.num_atoms), outputs.shape[:-2] + (self.num_atoms,))
        return ValueDistribution(mask_illegal(self._mean(outputs), legal), outputs, taus)

    def _stream(self, features: jnp.ndarray, per_action: int, noise: jax.Array | None) -> jnp.ndarray:
        """`[..., A, per_action]` from features `[..., F]`: one stream, or value and advantage streams (dueling)."""
        advantages = self._output(self.action_size * per_action, head_torso(self, features), noise)
        advantages = advantages.reshape(features.shape[:-1] + (self.action_size, per_action))
        if not self.dueling:
            return advantages
        value = self._output(per_action, head_torso(self, features), noise)[..., None, :]
        return value + advantages - jnp.mean(advantages, axis=-2, keepdims=True)

    def _output(self, features: int, x: jnp.ndarray, noise: jax.Array | None) -> jnp.ndarray:
        """A stream's output layer: `dense`, or with `noisy_sigma` > 0 a `NoisyDense` (Rainbow's noisy nets)."""
        if self.noisy_sigma > 0:
            return NoisyDense(features, 1.0, self.noisy_sigma)(x, noise)
        return dense(features, 1.0)(x)

    def _mean(self, outputs: jnp.ndarray) -> jnp.ndarray:
        """Q(s, a) `[..., A]`: the mean of each action's distribution `[..., A, N]`."""
        if self.kind == "categorical":
            support = categorical_support(self.num_atoms, self.v_min, self.v_max)
            return jnp.sum(jax.nn.softmax(outputs, axis=-1) * support, axis=-1)
        return jnp.mean(outputs, axis=-1)


class DistributionalQNetwork(QNetwork):
    """A `QBody` and a `DistributionHead`: `__call__(state, observation, first) -> (state, q_values [T, B, A])` for
    acting, `features` and `distribution` for learning (`distributional_dqn.loss`). `QNetwork`'s fields, and the
    head's."""

    kind: str = "categorical"
    num_atoms: int = 51
    v_min: float = -10.0
    v_max: float = 10.0
    acting_quantiles: int = 32
    embedding_size: int = 64
    dueling: bool = False
    noisy_sigma: float = 0.0

    def setup(self) -> None:
        self.body = QBody(**{name: getattr(self, name) for name in (*BODY_FIELDS, "layer_norm")})
        head_fields = (*HEAD_FIELDS, "action_size", "head_hidden_sizes", "activation", "layer_norm")
        self.head = DistributionHead(**{name: getattr(self, name) for name in head_fields})

    def __call__(
        self, state: Any, observation: Any, first: jnp.ndarray, noise: jax.Array | None = None
    ) -> tuple[Any, jnp.ndarray]:
        state, (features, legal) = self.features(state, observation, first)
        return state, self.head(features, legal, False, noise).q_values

    def features(self, state: Any, observation: Any, first: jnp.ndarray) -> tuple[Any, tuple]:
        """`(state, (features [T, B, F], legal actions [T, B, A] or None))` over a sequence."""
        state, features = self.body(state, observation, first)
        return state, (features, action_mask(observation))

    def distribution(
        self, features: jnp.ndarray, legal: jnp.ndarray | None, sampled: bool, noise: jax.Array | None = None
    ) -> ValueDistribution:
        return self.head(features, legal, sampled, noise)
