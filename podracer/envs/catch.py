"""Catch, with bsuite's rules (Osband et al., 2020, "Behaviour Suite for RL").

A ball starts in a random column of the top row of a `rows x columns` board
and falls one row per step; the agent moves a paddle on the bottom row left,
not at all, or right. When the ball reaches the bottom row the episode
terminates with reward +1 if the paddle is under it and -1 otherwise, so every
episode lasts `rows - 1` steps.
"""

import dataclasses

import chex
import jax
import jax.numpy as jnp
from dm_env import specs
from flax import struct

from podracer.config.field_checks import is_whole_number
from podracer.envs import timestep as ts
from podracer.envs.base import Environment


@struct.dataclass
class CatchState:
    ball_x: jnp.ndarray
    ball_y: jnp.ndarray
    paddle_x: jnp.ndarray


@dataclasses.dataclass(frozen=True)
class Catch(Environment):
    rows: int = 10
    columns: int = 5

    def __post_init__(self):
        if not (is_whole_number(self.rows, 2) and is_whole_number(self.columns, 1)):
            raise ValueError(
                f"Catch needs whole numbers rows >= 2 and columns >= 1, got {self.rows!r}x{self.columns!r}."
            )

    def reset(self, key: chex.PRNGKey) -> tuple[CatchState, ts.TimeStep]:
        state = CatchState(
            ball_x=jax.random.randint(key, (), 0, self.columns, jnp.int32),
            ball_y=jnp.int32(0),
            paddle_x=jnp.int32(self.columns // 2),
        )
        return state, ts.restart(self._observe(state))

    def step(self, state: CatchState, action: chex.Array) -> tuple[CatchState, ts.TimeStep]:
        move = jnp.asarray(action, jnp.int32) - 1  # Actions 0, 1, 2: left, stay, right.
        paddle_x = jnp.clip(state.paddle_x + move, 0, self.columns - 1)
        state = CatchState(ball_x=state.ball_x, ball_y=state.ball_y + 1, paddle_x=paddle_x)
        landed = state.ball_y == self.rows - 1
        reward = jnp.where(landed, jnp.where(state.paddle_x == state.ball_x, 1.0, -1.0), 0.0)
        return state, ts.transition(self._observe(state), reward, terminated=landed, truncated=False)

    def _observe(self, state: CatchState) -> jnp.ndarray:
        board = jnp.zeros((self.rows, self.columns), jnp.float32)
        board = board.at[state.ball_y, state.ball_x].set(1.0)
        return board.at[self.rows - 1, state.paddle_x].set(1.0)

    def observation_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((self.rows, self.columns), jnp.float32, 0.0, 1.0, name="board")

    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(3, name="action")


@dataclasses.dataclass(frozen=True)
class NestedCatch(Environment):
    """Catch whose observation is a nested dict, to exercise nested data end to end.

    `{"board": [rows, columns], "positions": {"ball": [2], "paddle": [1]}}`, the
    positions scaled to [0, 1]. Dynamics and rewards are Catch's.
    """

    rows: int = 10
    columns: int = 5

    def __post_init__(self):
        self._catch  # noqa: B018 -- Catch checks the board's size.

    @property
    def _catch(self) -> Catch:
        return Catch(rows=self.rows, columns=self.columns)

    def reset(self, key: chex.PRNGKey) -> tuple[CatchState, ts.TimeStep]:
        state, timestep = self._catch.reset(key)
        return state, timestep.replace(observation=self._observe(state, timestep.observation))

    def step(self, state: CatchState, action: chex.Array) -> tuple[CatchState, ts.TimeStep]:
        state, timestep = self._catch.step(state, action)
        return state, timestep.replace(observation=self._observe(state, timestep.observation))

    def _observe(self, state: CatchState, board: jnp.ndarray) -> dict:
        ball = jnp.stack([state.ball_x / (self.columns - 1 or 1), state.ball_y / (self.rows - 1)])
        paddle = jnp.stack([state.paddle_x / (self.columns - 1 or 1)])
        return {
            "board": board,
            "positions": {"ball": ball.astype(jnp.float32), "paddle": paddle.astype(jnp.float32)},
        }

    def observation_spec(self) -> dict:
        unit = dict(dtype=jnp.float32, minimum=0.0, maximum=1.0)
        return {
            "board": self._catch.observation_spec(),
            "positions": {
                "ball": specs.BoundedArray((2,), name="ball", **unit),
                "paddle": specs.BoundedArray((1,), name="paddle", **unit),
            },
        }

    def action_spec(self) -> specs.DiscreteArray:
        return self._catch.action_spec()
