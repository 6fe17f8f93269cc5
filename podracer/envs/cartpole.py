"""CartPole, the pole-balancing task of Barto, Sutton & Anderson (1983),
"Neuronlike adaptive elements that can solve difficult learning control problems".

A pure-JAX port of gymnasium's CartPole-v1: the same constants, the same
explicit-Euler equations in the same order, reward +1 on every step (the
terminating one included), a uniform start in [-0.05, 0.05]^4, termination when
|x| > 2.4 or |theta| > 12 degrees, and truncation after `max_episode_steps`
(500) steps, as gymnasium's TimeLimit does. Gymnasium computes in float64, this
port in float32, so trajectories agree step by step to float32 precision.
"""

import dataclasses
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs
from flax import struct

from podracer.config.field_checks import is_whole_number
from podracer.envs import timestep as ts
from podracer.envs.base import Environment

_GRAVITY = 9.8
_MASSCART = 1.0
_MASSPOLE = 0.1
_TOTAL_MASS = _MASSPOLE + _MASSCART
_LENGTH = 0.5  # Half the pole's length.
_POLEMASS_LENGTH = _MASSPOLE * _LENGTH
_FORCE_MAG = 10.0
_TAU = 0.02  # Seconds between state updates.
_THETA_THRESHOLD = 12 * 2 * math.pi / 360
_X_THRESHOLD = 2.4


@struct.dataclass
class CartPoleState:
    x: jnp.ndarray  # float32 cart position.
    x_dot: jnp.ndarray  # float32 cart velocity.
    theta: jnp.ndarray  # float32 pole angle, radians.
    theta_dot: jnp.ndarray  # float32 pole angular velocity.
    steps: jnp.ndarray  # int32 steps taken in this episode.


@dataclasses.dataclass(frozen=True)
class CartPole(Environment):
    max_episode_steps: int = 500

    def __post_init__(self):
        if not is_whole_number(self.max_episode_steps, 1):
            raise ValueError(f"max_episode_steps must be a whole number >= 1, got {self.max_episode_steps!r}.")

    def reset(self, key: chex.PRNGKey) -> tuple[CartPoleState, ts.TimeStep]:
        x, x_dot, theta, theta_dot = jax.random.uniform(key, (4,), jnp.float32, -0.05, 0.05)
        state = CartPoleState(x, x_dot, theta, theta_dot, steps=jnp.int32(0))
        return state, ts.restart(self._observe(state))

    def step(self, state: CartPoleState, action: chex.Array) -> tuple[CartPoleState, ts.TimeStep]:
        x, x_dot, theta, theta_dot = state.x, state.x_dot, state.theta, state.theta_dot
        force = jnp.where(action == 1, _FORCE_MAG, -_FORCE_MAG)
        costheta, sintheta = jnp.cos(theta), jnp.sin(theta)
        temp = (force + _POLEMASS_LENGTH * jnp.square(theta_dot) * sintheta) / _TOTAL_MASS
        thetaacc = (_GRAVITY * sintheta - costheta * temp) / (
            _LENGTH * (4.0 / 3.0 - _MASSPOLE * jnp.square(costheta) / _TOTAL_MASS)
        )
        xacc = temp - _POLEMASS_LENGTH * thetaacc * costheta / _TOTAL_MASS
        state = CartPoleState(
            x=x + _TAU * x_dot,
            x_dot=x_dot + _TAU * xacc,
            theta=theta + _TAU * theta_dot,
            theta_dot=theta_dot + _TAU * thetaacc,
            steps=state.steps + 1,
        )
        terminated = (jnp.abs(state.x) > _X_THRESHOLD) | (jnp.abs(state.theta) > _THETA_THRESHOLD)
        truncated = state.steps >= self.max_episode_steps
        return state, ts.transition(self._observe(state), 1.0, terminated, truncated)

    def _observe(self, state: CartPoleState) -> jnp.ndarray:
        return jnp.stack([state.x, state.x_dot, state.theta, state.theta_dot]).astype(jnp.float32)

    def observation_spec(self) -> specs.BoundedArray:
        big = np.finfo(np.float32).max
        high = np.array([2 * _X_THRESHOLD, big, 2 * _THETA_THRESHOLD, big], np.float32)
        return specs.BoundedArray((4,), np.float32, -high, high, name="observation")

    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(2, name="action")  # 0 pushes the cart left, 1 right.
