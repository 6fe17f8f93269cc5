"""GRU and LSTM cells with flax's parameters, arranged for speed: a sequence's input products first, then the loop.

A cell's step multiplies its input and its hidden state by one kernel per gate.
The inputs of a whole sequence are known before the loop starts, so here their
products are taken in one matrix product `[T, B, F] x [F, G * H]` (G gates of H
units), and each step of the loop is left one product of the hidden state by
the gates' kernels side by side, `[B, H] x [H, G * H]`. On XLA:CPU a scan of
flax's cells is bound by per-step overhead (G input and G hidden products a
step for `GRUCell`); with this one recurrent PPO on CartPole runs about 1.6x as
fast (docs/benchmarks.md, "Against PureJaxRL").

The parameters are flax's, by the same names and shapes (`GRUCell`'s
`ir, iz, in, hr, hz, hn`; `OptimizedLSTMCell`'s `ii, if, ig, io, hi, hf, hg, ho`),
initialised the same way, under the scope name `Core` gave flax's cell
(`FLAX_SCOPES`), so checkpoints of either load into the other. The arithmetic
is flax's (Cho et al. 2014 for the GRU, with the reset gate applied after the
hidden product as in cuDNN; Hochreiter & Schmidhuber 1997 with forget gates,
Gers et al. 2000, for the LSTM), equal to it up to float rounding.
"""

import functools
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

# The scope `Core` gave flax's cell in its scan (`<Cell>_1`: a first cell was built for the initial state).
FLAX_SCOPES = {"gru": "GRUCell_1", "lstm": "OptimizedLSTMCell_1"}

Step = Callable  # (carry, input products [B, G * H]) -> (carry, output [B, H])
# flax's initialisers: LeCun normal for the input kernels, orthogonal for the hidden ones, biases at zero.
_LECUN, _ORTHOGONAL = nn.initializers.lecun_normal(), nn.initializers.orthogonal()


class _DenseParams(nn.Module):
    """The parameters of a flax `Dense` layer of `features` units over `rows` inputs: kernel, and bias if `use_bias`."""

    rows: int
    features: int
    kernel_init: Callable
    use_bias: bool

    @nn.compact
    def __call__(self) -> tuple[jnp.ndarray, jnp.ndarray | None]:
        kernel = self.param("kernel", self.kernel_init, (self.rows, self.features))
        return kernel, self.param("bias", nn.initializers.zeros_init(), (self.features,)) if self.use_bias else None


def _side_by_side(rows: int, size: int, names: tuple, kernel_init: Callable, biased: tuple) -> tuple:
    """The kernels of the gates `names` side by side `[rows, len(names) * size]`, and the biases of those in `biased`."""
    layers = [_DenseParams(rows, size, kernel_init, name in biased, name=name)() for name in names]
    return jnp.concatenate([kernel for kernel, _ in layers], -1), [bias for _, bias in layers if bias is not None]


class GRU(nn.Module):
    """flax's `GRUCell` of `size` units: `features [T, B, F] -> (input products [T, B, 3H], step)`.

    r = sigmoid(W_ir x + b_ir + W_hr h), z = sigmoid(W_iz x + b_iz + W_hz h),
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.
    """

    size: int

    @nn.compact
    def __call__(self, features: jnp.ndarray) -> tuple[jnp.ndarray, Step]:
        inputs = ("ir", "iz", "in")
        input_kernel, input_biases = _side_by_side(features.shape[-1], self.size, inputs, _LECUN, inputs)
        hidden_kernel, (hn_bias,) = _side_by_side(self.size, self.size, ("hr", "hz", "hn"), _ORTHOGONAL, ("hn",))
        products = features @ input_kernel + jnp.concatenate(input_biases)
        return products, functools.partial(gru_step, hidden_kernel, hn_bias)


def gru_step(hidden_kernel: jnp.ndarray, hn_bias: jnp.ndarray, h: jnp.ndarray, products: jnp.ndarray) -> tuple:
    """One GRU step from state `h [B, H]` and the input's products `[B, 3H]` (biases in): `(h', h')`."""
    x_r, x_z, x_n = jnp.split(products, 3, axis=-1)
    h_r, h_z, h_n = jnp.split(h @ hidden_kernel, 3, axis=-1)
    r, z = jax.nn.sigmoid(x_r + h_r), jax.nn.sigmoid(x_z + h_z)
    n = jnp.tanh(x_n + r * (h_n + hn_bias))
    h = (1.0 - z) * n + z * h
    return h, h


class LSTM(nn.Module):
    """flax's `OptimizedLSTMCell` of `size` units: `features [T, B, F] -> (input products [T, B, 4H], step)`.

    Gates i, f, o = sigmoid(W_i* x + W_h* h + b_h*), g = tanh(W_ig x + W_hg h + b_hg);
    c' = f * c + i * g, h' = o * tanh(c'). The biases join the input products.
    """

    size: int

    @nn.compact
    def __call__(self, features: jnp.ndarray) -> tuple[jnp.ndarray, Step]:
        input_kernel, _ = _side_by_side(features.shape[-1], self.size, ("ii", "if", "ig", "io"), _LECUN, ())
        hidden = ("hi", "hf", "hg", "ho")
        hidden_kernel, biases = _side_by_side(self.size, self.size, hidden, _ORTHOGONAL, hidden)
        products = features @ input_kernel + jnp.concatenate(biases)
        return products, functools.partial(lstm_step, hidden_kernel)


def lstm_step(hidden_kernel: jnp.ndarray, state: tuple, products: jnp.ndarray) -> tuple:
    """One LSTM step from state `(c, h)` (each `[B, H]`) and the input's products `[B, 4H]` (biases in)."""
    c, h = state
    i, f, g, o = jnp.split(products + h @ hidden_kernel, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return (c, h), h


CELLS = {"gru": GRU, "lstm": LSTM}
