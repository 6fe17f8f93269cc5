"""The rules LPG's two grid-world families share (Oh et al. 2020, Appendix A.1-A.2, Table 2).

An agent collects objects on a `height x width` grid. Each object has a kind
`(reward, termination probability, respawn probability)`:

- 9 actions: stay, or move to one of the 8 neighbouring cells; a move into a
  wall or off the grid leaves the agent in place;
- an object present on the agent's cell after the move is collected: its
  reward is paid, it disappears, and with its termination probability the
  episode terminates (discount 0);
- an object absent at the start of a step reappears at its end with its
  respawn probability (where depends on the family; one that reappears under
  the agent is collected when a step next ends there);
- the episode is truncated (discount 1) after `max_episode_steps` steps (the
  variant's horizon unless given).

Each episode starts with every object present and the agent on a uniformly
random free cell that holds no object. The families differ in what the
lifetime's layout holds, where objects respawn, and what the agent observes
(`tabular.py`, `random_grid.py`).

Simplified from the paper: grids are open (the tabular layouts' walls in the
paper's figures are not reproduced), only the 9 movement actions are offered,
and a kind's termination is decided once, when the object is collected.
"""

import abc
import dataclasses
from typing import Any, ClassVar, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs
from flax import struct

from podracer.config.field_checks import is_whole_number
from podracer.envs import timestep as ts
from podracer.envs.lpg import lifetimes

# Action a moves by MOVES[a] (row, column): stay, then N, NE, E, SE, S, SW, W, NW.
MOVES = np.array([[0, 0], [-1, 0], [-1, 1], [0, 1], [1, 1], [1, 0], [1, -1], [0, -1], [-1, -1]], np.int32)


class ObjectKind(NamedTuple):
    reward: float
    termination: float  # Probability that collecting it ends the episode.
    respawn: float  # Per-step probability that it reappears once collected.


class GridVariant(NamedTuple):
    height: int
    width: int
    objects: tuple[ObjectKind, ...]  # One entry per object.
    max_episode_steps: int


def object_kinds(*groups: tuple[tuple[float, float, float], int]) -> tuple[ObjectKind, ...]:
    """One `ObjectKind` per object, from `((reward, termination, respawn), count)` groups (Table 2's notation)."""
    return tuple(ObjectKind(*kind) for kind, count in groups for _ in range(count))


@struct.dataclass
class GridState:
    layout: Any  # The lifetime's: kept by `reset_episode`.
    agent: jnp.ndarray  # int32: the agent's cell, row * width + column.
    objects: jnp.ndarray  # int32 [N]: each object's cell.
    present: jnp.ndarray  # bool [N]
    steps: jnp.ndarray  # int32: steps taken in this episode.
    key: chex.PRNGKey  # For collection, respawns and where objects reappear.


def random_cells(noise: jnp.ndarray, allowed: jnp.ndarray, count: int) -> jnp.ndarray:
    """`count` distinct cells drawn uniformly among the `allowed` ones (a bool mask [H * W]).

    They are the cells of the `count` largest of `noise`, iid uniform [H * W] in
    [0, 1): a uniformly random subset, for one cheap draw of random bits.
    """
    chex.assert_equal_shape([noise, allowed])
    return jax.lax.top_k(jnp.where(allowed, noise, -1.0), count)[1].astype(jnp.int32)


def cell_mask(cells: jnp.ndarray, size: int, where: Any = True) -> jnp.ndarray:
    """A bool mask [size] that is True at `cells` (where `where`)."""
    return jnp.zeros(size, bool).at[cells].max(jnp.broadcast_to(jnp.asarray(where, bool), cells.shape))


@dataclasses.dataclass(frozen=True)
class GridWorld(lifetimes.LifetimeEnvironment):
    """The shared dynamics; a family defines its layouts, respawns and observation."""

    variant: str = "dense"
    max_episode_steps: int | None = None  # None: the variant's horizon.
    held_out_layouts: int = 0  # 0: training layouts; n: one of the first n held-out layouts.
    VARIANTS: ClassVar[dict[str, GridVariant]] = {}

    def __post_init__(self):
        lifetimes.check_options(self.variant, self.VARIANTS, self.held_out_layouts)
        if self.max_episode_steps is not None and not is_whole_number(self.max_episode_steps, 1):
            raise ValueError(f"max_episode_steps must be None or a whole number >= 1, got {self.max_episode_steps!r}.")

    @property
    def spec(self) -> GridVariant:
        """The variant's grid, objects and horizon."""
        return self.VARIANTS[self.variant]

    @property
    def horizon(self) -> int:
        return self.max_episode_steps or self.spec.max_episode_steps

    @abc.abstractmethod
    def walls(self, layout: Any) -> jnp.ndarray:
        """The layout's walls, a bool mask [H * W]."""

    @abc.abstractmethod
    def episode_objects(self, layout: Any, noise: jnp.ndarray) -> jnp.ndarray:
        """Where the objects start an episode, int32 [N] distinct free cells; `noise` is uniform [H * W]."""

    @abc.abstractmethod
    def respawned(self, state: GridState, respawn: jnp.ndarray, free: jnp.ndarray, noise: jnp.ndarray) -> jnp.ndarray:
        """The objects' cells after those in `respawn` reappear on `free` cells; `noise` is uniform [H * W]."""

    @abc.abstractmethod
    def observe(self, state: GridState) -> jnp.ndarray:
        """The agent's observation of `state`."""

    def start_episode(self, layout: Any, key: chex.PRNGKey) -> tuple[GridState, ts.TimeStep]:
        key, noise_key = jax.random.split(key)
        size = self.spec.height * self.spec.width
        noise = jax.random.uniform(noise_key, (2, size))
        objects = self.episode_objects(layout, noise[0])
        agent = random_cells(noise[1], ~self.walls(layout) & ~cell_mask(objects, size), 1)[0]
        present = jnp.ones(len(self.spec.objects), bool)
        state = GridState(layout, agent, objects, present, jnp.int32(0), key)
        return state, ts.restart(self.observe(state))

    def step(self, state: GridState, action: chex.Array) -> tuple[GridState, ts.TimeStep]:
        kinds = np.array(self.spec.objects, np.float32)  # [N, 3]: reward, termination, respawn.
        key, noise_key = jax.random.split(state.key)
        count, walls = len(self.spec.objects), self.walls(state.layout)
        noise = jax.random.uniform(noise_key, (2 * count + walls.size,))  # Termination, respawn, where.
        agent = self._move(state.agent, action, walls)
        collected = state.present & (state.objects == agent)
        reward = jnp.sum(jnp.where(collected, kinds[:, 0], 0.0))
        terminated = jnp.any(collected & (noise[:count] < kinds[:, 1]))
        respawn = ~state.present & (noise[count : 2 * count] < kinds[:, 2])
        present = state.present & ~collected
        free = ~walls & ~cell_mask(jnp.append(state.objects, agent), walls.size, jnp.append(present, True))
        objects = self.respawned(state, respawn, free, noise[2 * count :])
        state = GridState(state.layout, agent, objects, present | respawn, state.steps + 1, key)
        truncated = state.steps >= self.horizon
        return state, ts.transition(self.observe(state), reward, terminated=terminated, truncated=truncated)

    def _move(self, agent: jnp.ndarray, action: chex.Array, walls: jnp.ndarray) -> jnp.ndarray:
        height, width = self.spec.height, self.spec.width
        move = jnp.asarray(MOVES)[action]
        row, column = agent // width + move[0], agent % width + move[1]
        inside = (row >= 0) & (row < height) & (column >= 0) & (column < width)
        target = jnp.clip(row, 0, height - 1) * width + jnp.clip(column, 0, width - 1)
        return jnp.where(inside & ~walls[target], target, agent).astype(jnp.int32)

    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(len(MOVES), name="action")
