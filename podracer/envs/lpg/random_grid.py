"""LPG's random grid worlds (Oh et al. 2020, Appendix A.2, Table 2): objects somewhere new every episode.

Every episode places the objects on distinct random free cells, and a
collected object reappears on a random free cell (not the agent's, not a
present object's), so a policy must read where things are. The agent
observes the symbolic grid, float32 planes `[height, width, 2 + K]`: walls,
the agent, and one plane per object kind (K kinds, in the variant's order).

A lifetime's layout is its walls: pillars on the interior cells whose row and
column are both odd, each there with probability 1/2. Pillars never touch, so
every free cell stays reachable. (The paper does not say what, besides object
placement, varies between random grid worlds; the pillars are ours, so that
a lifetime has a layout to keep and held-out layouts exist.)

Variants (size, objects as [reward, termination, respawn] x count, horizon),
from the paper's Table 2:

| variant | grid | objects | horizon |
| --- | --- | --- | --- |
| `dense` | 11 x 11 | [1, 0, 0.05] x 2, [-1, 0.5, 0.1], [-1, 0, 0.5] | 500 |
| `long` | 11 x 11 | [1, 0, 0.01] x 2, [-1, 0.5, 1] x 2 | 1000 |
| `small` | 5 x 7 | [1, 0, 0.05] x 2, [-1, 0.5, 0.1] x 2 | 500 |
| `small_sparse` | 5 x 7 | [1, 1, 1], [-1, 1, 1] x 2 | 50 |
| `very_dense` | 11 x 11 | [1, 0, 1] | 2000 |
"""

import dataclasses
from typing import ClassVar

import chex
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs
from flax import struct

from podracer.envs.lpg.grid import GridState, GridVariant, GridWorld, cell_mask, object_kinds, random_cells
from podracer.envs.lpg.tabular import VARIANTS as TABULAR_VARIANTS

VARIANTS = {
    "dense": TABULAR_VARIANTS["dense"],
    "long": TABULAR_VARIANTS["long"],
    "small": GridVariant(5, 7, object_kinds(((1.0, 0.0, 0.05), 2), ((-1.0, 0.5, 0.1), 2)), 500),
    "small_sparse": GridVariant(5, 7, object_kinds(((1.0, 1.0, 1.0), 1), ((-1.0, 1.0, 1.0), 2)), 50),
    "very_dense": GridVariant(11, 11, object_kinds(((1.0, 0.0, 1.0), 1)), 2000),
}


@struct.dataclass
class RandomLayout:
    walls: jnp.ndarray  # bool [H * W]


@dataclasses.dataclass(frozen=True)
class RandomGridWorld(GridWorld):
    """`lpg_random_grid`: `variant` is one of `VARIANTS`; see the module's docstring."""

    VARIANTS: ClassVar[dict[str, GridVariant]] = VARIANTS

    def sample_layout(self, key: chex.PRNGKey) -> RandomLayout:
        rows, columns = np.meshgrid(np.arange(self.spec.height), np.arange(self.spec.width), indexing="ij")
        pillar_cells = ((rows % 2 == 1) & (columns % 2 == 1)).ravel()
        return RandomLayout(jnp.asarray(pillar_cells) & jax.random.bernoulli(key, 0.5, pillar_cells.shape))

    def walls(self, layout: RandomLayout) -> jnp.ndarray:
        return layout.walls

    def episode_objects(self, layout: RandomLayout, noise: jnp.ndarray) -> jnp.ndarray:
        return random_cells(noise, ~layout.walls, len(self.spec.objects))

    def respawned(self, state: GridState, respawn: jnp.ndarray, free: jnp.ndarray, noise: jnp.ndarray) -> jnp.ndarray:
        return jnp.where(respawn, random_cells(noise, free, respawn.size), state.objects)

    def observe(self, state: GridState) -> jnp.ndarray:
        size = self.spec.height * self.spec.width
        objects = jax.nn.one_hot(state.objects, size) * state.present[:, None]  # [N, H * W]
        planes = jnp.stack([state.layout.walls, cell_mask(state.agent[None], size)]).astype(jnp.float32)
        planes = jnp.concatenate([planes, jnp.asarray(self._kinds).T @ objects])  # [2 + K, H * W]
        return planes.reshape(-1, self.spec.height, self.spec.width).transpose(1, 2, 0)

    @property
    def _kinds(self) -> np.ndarray:
        """[N, K]: one-hot, object i's kind among the variant's distinct kinds."""
        kinds = list(dict.fromkeys(self.spec.objects))
        return np.eye(len(kinds), dtype=np.float32)[[kinds.index(kind) for kind in self.spec.objects]]

    def observation_spec(self) -> specs.BoundedArray:
        shape = (self.spec.height, self.spec.width, 2 + self._kinds.shape[1])
        return specs.BoundedArray(shape, jnp.float32, 0.0, 1.0, name="grid")
