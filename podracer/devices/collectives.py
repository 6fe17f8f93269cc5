"""Collectives over a named device axis, written so that the same code runs on one device or many.

Agents receive the axis name as an argument of `learn` (brax's
`loss_and_pgrad(loss_fn, pmap_axis_name)` is the model): inside a replicated
program it names the mesh axis to average over, and `None` means there is no
collective at all, so `jax.jit(agent.learn)` works in a notebook with no mesh.
`mean_grad` is what most agents need: gradients averaged over every device.
"""

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

AxisName = str | None


def mean(tree: Any, axis_name: AxisName) -> Any:
    """`lax.pmean` of a whole pytree over `axis_name` as one collective; the tree itself when `axis_name` is None.

    XLA issues one all-reduce per leaf for a plain tree `pmean`; on CPU each costs
    tens of microseconds, so the leaves are flattened into one vector first. On a
    single device there is nothing to average, and the flattening is skipped too.
    """
    return _reduce(jax.lax.pmean, tree, axis_name)


def total(tree: Any, axis_name: AxisName) -> Any:
    """`lax.psum` of a whole pytree over `axis_name` as one collective (see `mean`)."""
    return _reduce(jax.lax.psum, tree, axis_name)


def axis_index(axis_name: AxisName) -> jax.Array:
    """This device's position along `axis_name`; 0 outside any mesh, as on a one-device mesh."""
    return jnp.int32(0) if axis_name is None else jax.lax.axis_index(axis_name)


def mean_grad(
    loss_fn: Callable[..., tuple[Any, Any]], axis_name: AxisName, grad: Callable | None = None
) -> Callable[..., tuple[Any, Any]]:
    """`jax.grad(loss_fn, has_aux=True)` with the gradients and the aux output averaged over `axis_name`.

    Each device differentiates the loss on its own shard of the batch
    (`local_grad`), and one flattened `pmean` then averages gradients and aux
    together. `grad(loss_fn)` may stand in for `jax.grad(loss_fn, has_aux=True)`
    (`optimizer.chunked_grad`).
    """
    local = local_grad(loss_fn, axis_name, grad)
    return lambda params, *args: mean(local(params, *args), axis_name)


def local_grad(
    loss_fn: Callable[..., tuple[Any, Any]], axis_name: AxisName, grad: Callable | None = None
) -> Callable[..., tuple[Any, Any]]:
    """`jax.grad(loss_fn, has_aux=True)` of this device's shard alone, for replicated parameters.

    Under `jax.shard_map`, `grad` with respect to replicated parameters would
    return the sum of every device's gradient (the transpose of a broadcast), so
    the parameters are first marked as varying over the axis (`lax.pcast`):
    each device gets its own gradient, pmap-style. For agents that average the
    gradient themselves and keep part of the aux output per device (a replay
    agent's new priorities).
    """
    per_device = (grad or functools.partial(jax.grad, has_aux=True))(loss_fn)

    def grad_fn(params: Any, *args: Any) -> tuple[Any, Any]:
        local_params = params if axis_name is None else jax.lax.pcast(params, axis_name, to="varying")
        return per_device(local_params, *args)

    return grad_fn


def _reduce(collective, tree: Any, axis_name: AxisName) -> Any:
    if axis_name is None:
        return tree
    if jax.lax.axis_size(axis_name) == 1:
        return jax.tree.map(lambda x: collective(x, axis_name), tree)  # Per-leaf, and free on one device.
    flat, unravel = ravel_pytree(tree)
    return unravel(collective(flat, axis_name))
