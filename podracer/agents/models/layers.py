"""The layers every network here is built of, and the product that gives dense layers a fast weight gradient on CPU.

`dense` and `conv` initialise as the PPO implementation details of Huang et
al. (2022) do: orthogonal weights, zero biases. Convolutions have gain
sqrt(2); a dense layer has the gain its caller gives (sqrt(2) in the torsos,
as for their convolutions; 0.01 for the policy head and 1 for the value
head). Every `dense` layer computes its product with `dense_product`, whose
weight gradient XLA:CPU computes on its matrix library's fast path for big
batches.
"""

import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


def dense(features: int, gain: float) -> nn.Dense:
    return nn.Dense(
        features,
        kernel_init=nn.initializers.orthogonal(gain),
        bias_init=nn.initializers.zeros,
        dot_general=dense_product,
    )


# From this many rows (network inputs in one product) up, `dense_product` takes the weight gradient as a plain
# product; below, it is `lax.dot_general` itself, so that small workloads keep their exact numbers.
TRANSPOSED_GRADIENT_ROWS = 1024


def dense_product(
    inputs: jnp.ndarray, kernel: jnp.ndarray, dimension_numbers, precision=None, **options
) -> jnp.ndarray:
    """`inputs [..., in] @ kernel [in, out]`, the product `nn.Dense` asks of its `dot_general`, differentiated so that
    XLA:CPU computes the weight gradient of a big batch on its fast path.

    Autodiff's weight gradient `inputs^T @ d_output` contracts the batch axis of
    both operands, a form XLA:CPU leaves to a generic kernel rather than to its
    matrix library. Materialising a transpose first (kept apart by optimisation
    barriers) makes it a plain product, faster even with the copy. The copy is
    of the narrower operand: `inputs^T` where the layer widens (on the 2-core
    CI machine, one thread, 1,088 rows, 137 us against 93 us for the 64 x 64
    layer; actor-critic's whole gradient step on Catch is 1.15x as fast), and
    `d_output^T`, the product then transposed, where it narrows: a 16-unit
    layer over flattened 84x84x4 frames, 1,344 rows, forward and gradient,
    takes 66-68 ms against 72-85 ms with autodiff's gradient and 88-99 ms
    copying its 152 MB of inputs.
    Other platforms differentiate as usual.

    Below `TRANSPOSED_GRADIENT_ROWS` rows (the shape is static, so this is
    decided while tracing; a symbolic batch, which is exported, not differentiated, counts as few) it is `lax.dot_general` with autodiff's gradient,
    although the plain product is faster there too (1.09x at 136 rows, 1.13x at
    672): the sums' other order changes float rounding, and on fragile tasks
    rounding decides which seeds end above a threshold. With the plain product
    everywhere, Sebulba IMPALA on CartPole (672 rows per step) ended seeds 1 and
    3 at 350 and 449 instead of 500; small workloads, the seed tables measured
    on them and the learning tests' seeds keep their numbers this way.
    """
    rows = math.prod(inputs.shape[:-1])  # Symbolic in an exported policy (`podracer.experiment.export`): acting only.
    if jax.export.is_symbolic_dim(rows) or rows < TRANSPOSED_GRADIENT_ROWS:
        return jax.lax.dot_general(inputs, kernel, dimension_numbers, precision=precision, **options)
    return _product(inputs, kernel)  # `Dense`'s dimension numbers: the last axis of inputs with the kernel's first.


@jax.custom_vjp
def _product(inputs: jnp.ndarray, kernel: jnp.ndarray) -> jnp.ndarray:
    return jnp.matmul(inputs, kernel)


def _product_forward(inputs, kernel):
    return _product(inputs, kernel), (inputs, kernel)


def _product_backward(residuals, d_output):
    # Through `jax.vjp`, so that a cotangent is summed over the device axes it varies along and its primal does not,
    # as autodiff's own transposes do (under `shard_map`, with replicated inputs and per-device parameters).
    inputs, kernel = residuals
    _, inputs_vjp = jax.vjp(lambda x: x @ kernel, inputs)
    rows, d_rows = inputs.reshape(-1, inputs.shape[-1]), d_output.reshape(-1, d_output.shape[-1])
    if rows.shape[1] <= d_rows.shape[1]:  # Copy the narrower operand: here the inputs, for `rows^T @ d_rows`.
        rows_t = _held_on_cpu(rows.T)
        _, kernel_vjp = jax.vjp(lambda w: rows_t.T @ w, kernel)
        return inputs_vjp(d_output)[0], kernel_vjp(d_rows)[0]
    # Wide inputs (flattened frames): `(d_rows^T @ rows)^T`, transposing the small gradient after the product.
    _, kernel_t_vjp = jax.vjp(lambda w_t: w_t @ rows.T, kernel.T)
    d_kernel_t = kernel_t_vjp(_held_on_cpu(d_rows.T))[0]
    return inputs_vjp(d_output)[0], _held_on_cpu(d_kernel_t).T


def _held_on_cpu(x: jnp.ndarray) -> jnp.ndarray:
    """`x`, materialised on CPU: an optimisation barrier keeps XLA from folding a transpose back into a product."""
    return jax.lax.platform_dependent(x, cpu=jax.lax.optimization_barrier, default=lambda x: x)


_product.defvjp(_product_forward, _product_backward)


def conv(features: int, kernel: int, stride: int, padding: str) -> nn.Conv:
    return nn.Conv(
        features,
        (kernel, kernel),
        strides=(stride, stride),
        padding=padding,
        kernel_init=nn.initializers.orthogonal(np.sqrt(2)),
        bias_init=nn.initializers.zeros,
    )
