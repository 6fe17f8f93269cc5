"""The four-rooms gridworld of Sutton, Precup & Singh (1999).

R. S. Sutton, D. Precup and S. Singh, "Between MDPs and semi-MDPs: A framework
for temporal abstraction in reinforcement learning", Artificial Intelligence
112 (1999), 181-211, Figure 2: a 13x13 grid (outer walls included) split into
four rooms joined by four one-cell doorways ("hallways"), 104 free cells.

The agent moves up, right, down or left; a move into a wall leaves it in place
(the paper's stochastic action failures are left out). Reaching the goal gives
reward +1 and terminates the episode (discount 0); otherwise the episode is
truncated after `max_episode_steps` steps (discount 1). The goal is fixed in
the bottom-right room's far corner unless `random_goal`, when it is a uniformly
random free cell; the agent starts on a uniformly random free cell that is not
the goal. Observations are `[13, 13, 3]` float32 planes: walls, agent, goal.
"""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs
from flax import struct

from podracer.config.field_checks import is_whole_number
from podracer.envs import timestep as ts
from podracer.envs.base import Environment

# Figure 2 of the paper: "#" is a wall, "." a free cell.
_LAYOUT_ROWS = (
    "#############",
    "#.....#.....#",
    "#.....#.....#",
    "#...........#",  # Hallway (3, 6): top-left <-> top-right.
    "#.....#.....#",
    "#.....#.....#",
    "##.####.....#",  # Hallway (6, 2): top-left <-> bottom-left.
    "#.....###.###",  # Hallway (7, 9): top-right <-> bottom-right.
    "#.....#.....#",
    "#.....#.....#",
    "#...........#",  # Hallway (10, 6): bottom-left <-> bottom-right.
    "#.....#.....#",
    "#############",
)
SIZE = len(_LAYOUT_ROWS)
WALLS = np.array([[c == "#" for c in row] for row in _LAYOUT_ROWS], dtype=bool)  # [13, 13]
HALLWAYS = ((3, 6), (6, 2), (7, 9), (10, 6))
DEFAULT_GOAL = (11, 11)  # Bottom-right corner of the bottom-right room.

_WALLS_F32 = WALLS.astype(np.float32)
FREE_CELLS = np.argwhere(~WALLS).astype(np.int32)  # [104, 2], row-major order.
_DEFAULT_GOAL_INDEX = int(np.flatnonzero((FREE_CELLS == DEFAULT_GOAL).all(axis=1))[0])
# Actions 0, 1, 2, 3: up, right, down, left, as (row, column) offsets.
_MOVES = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]], dtype=np.int32)


@struct.dataclass
class FourRoomsState:
    agent: jnp.ndarray  # int32 [2]: (row, column).
    goal: jnp.ndarray  # int32 [2]: (row, column).
    steps: jnp.ndarray  # int32: steps taken in this episode.


@dataclasses.dataclass(frozen=True)
class FourRooms(Environment):
    max_episode_steps: int = 100
    random_goal: bool = False

    def __post_init__(self):
        if not is_whole_number(self.max_episode_steps, 1):
            raise ValueError(f"max_episode_steps must be a whole number >= 1, got {self.max_episode_steps!r}.")
        if not isinstance(self.random_goal, bool):
            raise ValueError(f"random_goal must be True or False, got {self.random_goal!r}.")

    def reset(self, key: chex.PRNGKey) -> tuple[FourRoomsState, ts.TimeStep]:
        num_free = FREE_CELLS.shape[0]
        # One draw for the goal (used when `random_goal`) and one for the start, which
        # is uniform over the other free cells: an index among num_free - 1 that skips
        # the goal's slot.
        goal_index, start_index = jax.random.randint(key, (2,), 0, jnp.array([num_free, num_free - 1]))
        if not self.random_goal:  # A static field, not a traced value.
            goal_index = jnp.int32(_DEFAULT_GOAL_INDEX)
        start_index = start_index + (start_index >= goal_index)
        cells = jnp.asarray(FREE_CELLS)
        state = FourRoomsState(agent=cells[start_index], goal=cells[goal_index], steps=jnp.int32(0))
        return state, ts.restart(self._observe(state))

    def step(self, state: FourRoomsState, action: chex.Array) -> tuple[FourRoomsState, ts.TimeStep]:
        target = jnp.clip(state.agent + jnp.asarray(_MOVES)[action], 0, SIZE - 1)
        blocked = jnp.asarray(WALLS)[target[0], target[1]]
        agent = jnp.where(blocked, state.agent, target)
        state = FourRoomsState(agent=agent, goal=state.goal, steps=state.steps + 1)
        at_goal = jnp.all(agent == state.goal)
        truncated = state.steps >= self.max_episode_steps
        reward = jnp.where(at_goal, 1.0, 0.0)
        return state, ts.transition(self._observe(state), reward, terminated=at_goal, truncated=truncated)

    def _observe(self, state: FourRoomsState) -> jnp.ndarray:
        rows = jnp.arange(SIZE)[:, None]
        columns = jnp.arange(SIZE)[None, :]

        def one_hot(cell):
            return ((rows == cell[0]) & (columns == cell[1])).astype(jnp.float32)

        return jnp.stack([jnp.asarray(_WALLS_F32), one_hot(state.agent), one_hot(state.goal)], axis=-1)

    def observation_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((SIZE, SIZE, 3), jnp.float32, 0.0, 1.0, name="grid")

    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(4, name="action")
