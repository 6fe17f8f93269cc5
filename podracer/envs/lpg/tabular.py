"""LPG's tabular grid worlds (Oh et al. 2020, Appendix A.1, Table 2): objects at fixed cells for a lifetime.

A lifetime's layout is where each object lives: distinct cells drawn
uniformly. Every episode starts with the objects there, and a collected
object reappears on its own cell. The agent observes the tabular state, a
one-hot vector over (agent's cell, which objects are present):
`cell * 2**N + sum_i present_i * 2**i`, so a tabular agent is a lookup table.

Variants (size, objects as [reward, termination, respawn] x count, horizon),
from the paper's Table 2:

| variant | grid | objects | horizon |
| --- | --- | --- | --- |
| `dense` | 11 x 11 | [1, 0, 0.05] x 2, [-1, 0.5, 0.1], [-1, 0, 0.5] | 500 |
| `sparse` | 13 x 13 | [1, 1, 0], [-1, 1, 0] | 50 |
| `long` | 11 x 11 | [1, 0, 0.01] x 2, [-1, 0.5, 1] x 2 | 1000 |
| `longer` | 7 x 9 | [1, 0.1, 0.01] x 2, [-1, 0.8, 1] x 5 | 2000 |
| `long_dense` | 11 x 11 | [1, 0, 0.005] x 4 | 2000 |

The grids are open (see `grid.py` for the rules and what is simplified).
"""

import dataclasses
from typing import ClassVar

import chex
import jax
import jax.numpy as jnp
from dm_env import specs
from flax import struct

from podracer.envs.lpg.grid import GridState, GridVariant, GridWorld, object_kinds, random_cells

VARIANTS = {
    "dense": GridVariant(
        11, 11, object_kinds(((1.0, 0.0, 0.05), 2), ((-1.0, 0.5, 0.1), 1), ((-1.0, 0.0, 0.5), 1)), 500
    ),
    "sparse": GridVariant(13, 13, object_kinds(((1.0, 1.0, 0.0), 1), ((-1.0, 1.0, 0.0), 1)), 50),
    "long": GridVariant(11, 11, object_kinds(((1.0, 0.0, 0.01), 2), ((-1.0, 0.5, 1.0), 2)), 1000),
    "longer": GridVariant(7, 9, object_kinds(((1.0, 0.1, 0.01), 2), ((-1.0, 0.8, 1.0), 5)), 2000),
    "long_dense": GridVariant(11, 11, object_kinds(((1.0, 0.0, 0.005), 4)), 2000),
}


@struct.dataclass
class TabularLayout:
    objects: jnp.ndarray  # int32 [N]: each object's cell for the lifetime.


@dataclasses.dataclass(frozen=True)
class TabularGridWorld(GridWorld):
    """`lpg_tabular`: `variant` is one of `VARIANTS`; see the module's docstring."""

    VARIANTS: ClassVar[dict[str, GridVariant]] = VARIANTS

    def sample_layout(self, key: chex.PRNGKey) -> TabularLayout:
        size = self.spec.height * self.spec.width
        return TabularLayout(
            random_cells(jax.random.uniform(key, (size,)), jnp.ones(size, bool), len(self.spec.objects))
        )

    def walls(self, layout: TabularLayout) -> jnp.ndarray:
        return jnp.zeros(self.spec.height * self.spec.width, bool)

    def episode_objects(self, layout: TabularLayout, noise: jnp.ndarray) -> jnp.ndarray:
        return layout.objects

    def respawned(self, state: GridState, respawn: jnp.ndarray, free: jnp.ndarray, noise: jnp.ndarray) -> jnp.ndarray:
        return state.objects  # Objects never leave their cells; only `present` changes.

    def observe(self, state: GridState) -> jnp.ndarray:
        bits = jnp.sum(state.present.astype(jnp.int32) << jnp.arange(state.present.size))
        return jax.nn.one_hot(state.agent * 2**state.present.size + bits, self._num_states, dtype=jnp.float32)

    @property
    def _num_states(self) -> int:
        return self.spec.height * self.spec.width * 2 ** len(self.spec.objects)

    def observation_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((self._num_states,), jnp.float32, 0.0, 1.0, name="state")
