"""`dense_product`: the value and gradients of a plain product, on one device and summed over several."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents.models.layers import TRANSPOSED_GRADIENT_ROWS, dense_product


def _product_loss(product, inputs, kernel, weights):
    return jnp.sum(jnp.tanh(product(inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())))) * weights)


def _product_case(leading: tuple, kernel_shape: tuple) -> tuple:
    rng = np.random.default_rng(5)
    inputs = jnp.asarray(rng.normal(size=leading + kernel_shape[:1]), jnp.float32)
    kernel = jnp.asarray(rng.normal(size=kernel_shape), jnp.float32)
    weights = jnp.asarray(rng.normal(size=leading + kernel_shape[1:]), jnp.float32)
    return inputs, kernel, weights


# 15 rows, and 1,200 >= TRANSPOSED_GRADIENT_ROWS; inputs narrower than the outputs (the inputs are copied
# transposed) and wider (the output gradient is).
@pytest.mark.parametrize("leading", [(3, 5), (4, 300)])
@pytest.mark.parametrize("kernel_shape", [(4, 7), (7, 4)])
def test_dense_product_has_the_value_and_gradients_of_a_plain_product(leading, kernel_shape):
    """`dense_product` only changes how XLA:CPU lays out the weight gradient; inputs may have several leading axes."""
    inputs, kernel, weights = _product_case(leading, kernel_shape)
    ours_fn = jax.jit(jax.value_and_grad(functools.partial(_product_loss, dense_product), argnums=(0, 1)))
    held = "optimization_barrier" in ours_fn.lower(inputs, kernel, weights).as_text()
    assert held == (np.prod(leading) >= TRANSPOSED_GRADIENT_ROWS)  # On CPU, from that many rows.
    ours = ours_fn(inputs, kernel, weights)
    plain = jax.value_and_grad(functools.partial(_product_loss, jax.lax.dot_general), argnums=(0, 1))(
        inputs, kernel, weights
    )
    for got, expected in zip(jax.tree.leaves(ours), jax.tree.leaves(plain), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("kernel_shape", [(4, 7), (7, 4)])
def test_dense_product_gradients_sum_over_devices_as_autodiff_does(kernel_shape):
    """Under `shard_map`, with the rows split over two devices and the kernel replicated, as in a learner update."""
    inputs, kernel, weights = _product_case((2, 1200), kernel_shape)
    mesh = jax.make_mesh((2,), ("d",), devices=jax.devices()[:2])
    rows, replicated = jax.P(None, "d"), jax.P()

    def mean_gradient(product):
        def per_device(inputs, kernel, weights):
            grad = jax.grad(functools.partial(_product_loss, product), argnums=1)(inputs, kernel, weights)
            return jax.lax.pmean(grad, "d")

        spec = (rows, replicated, rows)
        placed = [
            jax.device_put(x, jax.NamedSharding(mesh, s)) for x, s in zip((inputs, kernel, weights), spec, strict=True)
        ]
        return jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=spec, out_specs=replicated))(*placed)

    np.testing.assert_allclose(mean_gradient(dense_product), mean_gradient(jax.lax.dot_general), rtol=1e-5, atol=1e-4)
