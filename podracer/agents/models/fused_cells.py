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

The input products enter the loop as G arrays `[T, B, H]`, one a gate, not as
one `[T, B, G * H]`: XLA:CPU runs a step's fused gate arithmetic several times
slower when it reads several slices of the step's one input (it appears not to
vectorise it). The GRU's forward step took 3.3 times as long that way (180
against 55 us for 96 x 64 units, the AVX2 host; the LSTM's 2 times), and VDN's
gradient step on MPE spread 1.26 times (13.5 against 10.7 ms).
"""

import functools
from collections.abc import Callable
from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

# The scope `Core` gave flax's cell in its scan (`<Cell>_1`: a first cell was built for the initial state).
FLAX_SCOPES = {"gru": "GRUCell_1", "lstm": "OptimizedLSTMCell_1"}

Step = Callable  # (carry, input products: G arrays [B, H]) -> (carry, output [B, H])
Run = Callable  # (state [B, ...], fresh state [B, ...], first [T, B]) -> (state, outputs [T, B, H])
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
    """flax's `GRUCell` of `size` units: `features [T, B, F] -> run`, `run(state, fresh, first) -> (state, outputs)`.

    r = sigmoid(W_ir x + b_ir + W_hr h), z = sigmoid(W_iz x + b_iz + W_hz h),
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.
    """

    size: int

    @nn.compact
    def __call__(self, features: jnp.ndarray) -> Run:
        inputs = ("ir", "iz", "in")
        input_kernel, input_biases = _side_by_side(features.shape[-1], self.size, inputs, _LECUN, inputs)
        hidden_kernel, (hn_bias,) = _side_by_side(self.size, self.size, ("hr", "hz", "hn"), _ORTHOGONAL, ("hn",))
        products = tuple(jnp.split(features @ input_kernel + jnp.concatenate(input_biases), 3, axis=-1))
        return functools.partial(gru_sequence, hidden_kernel, hn_bias, products)


def gru_gates(hidden_kernel: jnp.ndarray, hn_bias: jnp.ndarray, h: jnp.ndarray, products: tuple) -> tuple:
    """One GRU step from state `h [B, H]` and the input's products `(x_r, x_z, x_n)`, each `[B, H]` (biases in):
    `(h', (r, z, m, n))`, with m = W_hn h + b_hn, what the step's gradient reads."""
    x_r, x_z, x_n = products
    h_r, h_z, h_n = jnp.split(h @ hidden_kernel, 3, axis=-1)
    r, z = jax.nn.sigmoid(x_r + h_r), jax.nn.sigmoid(x_z + h_z)
    m = h_n + hn_bias
    n = jnp.tanh(x_n + r * m)
    return (1.0 - z) * n + z * h, (r, z, m, n)


def _gru_forward(hidden_kernel, hn_bias, products, state, fresh, first) -> tuple:
    """The sequence's `(state, outputs)` and, for its gradient, each step's gates (r, z, m, n)."""

    def reset_and_step(h: jnp.ndarray, inputs: tuple) -> tuple:
        step_products, step_first = inputs
        new, gates = gru_gates(hidden_kernel, hn_bias, reset_at_first(h, fresh, step_first), step_products)
        return new, (new, gates)

    last, (outputs, saved) = jax.lax.scan(reset_and_step, state, (products, first))
    return (last, outputs), saved


@jax.custom_vjp
def gru_sequence(hidden_kernel, hn_bias, products: tuple, state, fresh, first) -> tuple:
    """`(state [B, H], outputs [T, B, H])` of the GRU over the input products `(x_r, x_z, x_n)` (each `[T, B, H]`),
    from `state`, the state replaced by `fresh` where `first` `[T, B]` is true.

    Its gradient is written out (`_gru_backward`) rather than left to autodiff,
    which accumulates the hidden kernel's gradient inside the reverse loop.
    """
    return _gru_forward(hidden_kernel, hn_bias, products, state, fresh, first)[0]


def _gru_backward(residuals: tuple, cotangents: tuple) -> tuple:
    """Backpropagation through time of `gru_sequence`: the reverse loop carries only the state's cotangent and
    gives each step's gate cotangents; the kernel's gradient, sum_t h_t^T dgates_t, is one product after it.

    With a_r, a_z the gates' pre-activations, a_n = x_n + r m and g the cotangent of h':
    dn = g (1 - z), da_n = dn (1 - n^2), da_z = g (h - n) z (1 - z), dm = da_n r,
    da_r = da_n m r (1 - r), dh = g z + da_r W_hr^T + da_z W_hz^T + dm W_hn^T.
    """
    hidden_kernel, saved, first = residuals
    d_last, d_outputs = cotangents

    def back(carry: tuple, inputs: tuple) -> tuple:
        d_next, d_fresh = carry
        d_output, (h, r, z, m, n), step_first = inputs
        g = d_next + d_output
        da_n = g * (1.0 - z) * (1.0 - n * n)
        da_z = g * (h - n) * z * (1.0 - z)
        dm = da_n * r
        da_r = da_n * m * r * (1.0 - r)
        d_gates = jnp.concatenate([da_r, da_z, dm], axis=-1)
        dh = g * z + d_gates @ hidden_kernel.T
        reset = step_first[:, None]
        return (jnp.where(reset, 0.0, dh), d_fresh + jnp.where(reset, dh, 0.0)), (d_gates, da_n)

    d_zero = jnp.zeros_like(d_last)
    (d_state, d_fresh), (d_gates, da_n) = jax.lax.scan(back, (d_last, d_zero), (d_outputs, saved, first), reverse=True)
    da_r, da_z, dm = jnp.split(d_gates, 3, axis=-1)
    d_kernel = jnp.einsum("tbh,tbk->hk", saved[0], d_gates)
    return d_kernel, jnp.sum(dm, axis=(0, 1)), (da_r, da_z, da_n), d_state, d_fresh, None


def _gru_forward_with_residuals(hidden_kernel, hn_bias, products, state, fresh, first) -> tuple:
    """The forward pass, and what `_gru_backward` reads: each step's state `h` (after its reset) and gates.

    The states are the outputs shifted by a step and reset, taken after the
    loop: one array fewer for the loop to write each step (VDN's gradient on
    MPE spread about 2% quicker).
    """
    (last, outputs), gates = _gru_forward(hidden_kernel, hn_bias, products, state, fresh, first)
    given = jnp.concatenate([state[None], outputs[:-1]])  # The state each step was given, before its reset.
    states = jnp.where(first[..., None], fresh[None], given)
    return (last, outputs), (hidden_kernel, (states, *gates), first)


gru_sequence.defvjp(_gru_forward_with_residuals, _gru_backward)


class LSTM(nn.Module):
    """flax's `OptimizedLSTMCell` of `size` units: `features [T, B, F] -> run`, as `GRU`'s.

    Gates i, f, o = sigmoid(W_i* x + W_h* h + b_h*), g = tanh(W_ig x + W_hg h + b_hg);
    c' = f * c + i * g, h' = o * tanh(c'). The biases join the input products.
    """

    size: int

    @nn.compact
    def __call__(self, features: jnp.ndarray) -> Run:
        input_kernel, _ = _side_by_side(features.shape[-1], self.size, ("ii", "if", "ig", "io"), _LECUN, ())
        hidden = ("hi", "hf", "hg", "ho")
        hidden_kernel, biases = _side_by_side(self.size, self.size, hidden, _ORTHOGONAL, hidden)
        products = tuple(jnp.split(features @ input_kernel + jnp.concatenate(biases), 4, axis=-1))
        return functools.partial(scan_cell, functools.partial(lstm_step, hidden_kernel), products)


def lstm_step(hidden_kernel: jnp.ndarray, state: tuple, products: tuple) -> tuple:
    """One LSTM step from state `(c, h)` and the input's products `(x_i, x_f, x_g, x_o)` (biases in), each `[B, H]`."""
    c, h = state
    hidden_products = jnp.split(h @ hidden_kernel, 4, axis=-1)
    i, f, g, o = (x + hidden for x, hidden in zip(products, hidden_products, strict=True))
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return (c, h), h


def reset_at_first(state: Any, fresh: Any, first: chex.Array) -> Any:
    """`state` (leaves `[B, ...]`), with `fresh` in place of it for the environments where `first` `[B]` is true."""

    def choose(fresh_leaf, leaf):
        return jnp.where(first.reshape(first.shape + (1,) * (leaf.ndim - 1)), fresh_leaf, leaf)

    return jax.tree.map(choose, fresh, state)


def scan_cell(step: Step, products: tuple, state: Any, fresh: Any, first: chex.Array) -> tuple[Any, jnp.ndarray]:
    """`(state, outputs [T, B, H])` of a cell's `step` over the input products (leaves `[T, B, H]`), from `state`,
    the state replaced by `fresh` where `first` `[T, B]` is true."""

    def reset_and_step(carry: Any, inputs: tuple) -> tuple[Any, jnp.ndarray]:
        step_products, step_first = inputs
        return step(reset_at_first(carry, fresh, step_first), step_products)

    return jax.lax.scan(reset_and_step, state, (products, first))


CELLS = {"gru": GRU, "lstm": LSTM}
