"""Recurrent cores: an LSTM or a GRU over a sequence, starting afresh where an episode starts.

A core sits between a network's torso and its heads, as the LSTM does in the
deep agent of IMPALA (Espeholt et al. 2018, Figure 3). `network.core` picks
it: "none" (a feed-forward network), "lstm" (flax's `OptimizedLSTMCell`, the
state a pair `(c, h)`) or "gru" (flax's `GRUCell`, the state `h`), each of
`network.core_size` units. The state starts at zeros, flax's default. The
cells are `fused_cells`': flax's parameters and arithmetic, the input products
of the whole sequence taken before the loop.

`Core` runs a cell over a sequence with `lax.scan`, as PureJaxRL's
`ppo_rnn.py` does: before each step, the state of every environment whose
timestep is FIRST is replaced by the initial state (`fused_cells.reset_at_first`). Acting
is that same scan over a sequence of one step, so acting and learning reset
the state at the same steps by construction.
"""

from typing import Any

import chex
import flax.linen as nn
import jax.numpy as jnp

from podracer.agents.models.fused_cells import CELLS, FLAX_SCOPES

CORES = ("none", "lstm", "gru")


def initial_state(core: str, size: int, batch_size: int) -> Any:
    """The state of `batch_size` environments before their first step, leaves `[batch_size, size]`; `()` for "none"."""
    if core not in CORES:
        raise ValueError(f"Unknown recurrent core {core!r}; choose one of {CORES}.")
    zeros = jnp.zeros((batch_size, size))
    return {"none": (), "lstm": (zeros, zeros), "gru": zeros}[core]


class Core(nn.Module):
    """`(state [B, ...], features [T, B, F], first [T, B]) -> (state, outputs [T, B, size])`: a cell over T steps."""

    core: str
    size: int

    @nn.compact
    def __call__(self, state: Any, features: jnp.ndarray, first: jnp.ndarray) -> tuple[Any, jnp.ndarray]:
        chex.assert_rank([features, first], [3, 2])
        chex.assert_equal_shape_prefix([features, first], 2)
        fresh = initial_state(self.core, self.size, features.shape[1])
        return CELLS[self.core](self.size, name=FLAX_SCOPES[self.core])(features)(state, fresh, first)
