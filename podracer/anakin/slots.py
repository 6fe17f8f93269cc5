"""A dispatch's K slots: up to K repeats of a step in one compiled loop, their outputs stacked over K.

The number of repeats is an argument of the compiled program (1 to K), so one
program serves a shorter last dispatch, and one shortened to honour a stop
signal in time, without recompiling; the outputs of the repeats not made are
zeros, and `updates_run` takes the ones that were. Anakin's dispatch (updates)
and the meta-trainer's (meta-updates) both run this way.
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


def repeat_into_slots(step: Callable, state: Any, repeats: jax.Array, slots: int) -> tuple[Any, Any]:
    """`repeats` (1 to `slots`) calls of `step(state) -> (state, outputs)` in a `fori_loop`: the last state, and the
    outputs stacked over `slots` (the first `repeats` written, the rest zeros), so one program serves any count.
    """
    shapes = jax.eval_shape(step, state)[1]
    stacked = jax.tree.map(lambda x: jnp.zeros((slots, *x.shape), x.dtype), shapes)

    def one(index, carry):
        state, outputs = carry
        state, step_outputs = step(state)
        return state, write_at(outputs, index, step_outputs)

    return jax.lax.fori_loop(0, repeats, one, (state, stacked))


def write_at(stacked: Any, index: jax.Array, tree: Any) -> Any:
    """`stacked` (leaves `[N, ...]`) with `tree` written at `index` along the leading axis."""
    return jax.tree.map(lambda xs, x: jax.lax.dynamic_update_index_in_dim(xs, x, index, 0), stacked, tree)


def updates_run(outputs: Any, updates: int, members: int = 0) -> Any:
    """The first `updates` slots of a dispatch's stacked outputs (after a population's member axis)."""
    return jax.tree.map(lambda x: x[:, :updates] if members else x[:updates], outputs)
