"""A stateful `dm_env.Environment` view of a pure-JAX podracer environment.

Useful to run dm_env tooling (its conformance tests, evaluation loops, actors
written for dm_env) against the functional environments. The adapter keeps the
PRNG key and the environment state itself, and calls jitted `reset`/`step`;
timesteps come back as numpy, with dm_env's conventions: `reward` and
`discount` are None on FIRST, `step` after a LAST timestep (or before any
`reset`) starts a new episode and ignores its action.
"""

import functools
from collections.abc import Callable
from typing import Any

import dm_env
import jax
import numpy as np

from podracer.envs.base import Environment


class DmEnvAdapter(dm_env.Environment):
    """Exposes a podracer `Environment` through the stateful `dm_env` API."""

    def __init__(self, env: Environment, seed: int = 0):
        self._env = env
        self._key = jax.random.PRNGKey(seed)
        self._state = None
        self._needs_reset = True
        self._action_spec = env.action_spec()
        self._reward_spec = env.reward_spec()
        self._discount_spec = env.discount_spec()
        self._reset, self._step = _jitted(env)

    @property
    def env(self) -> Environment:
        return self._env

    def reset(self) -> dm_env.TimeStep:
        self._key, self._state, timestep = self._reset(self._key)
        timestep = jax.device_get(timestep)
        self._needs_reset = False
        return dm_env.restart(timestep.observation)

    def step(self, action: Any) -> dm_env.TimeStep:
        if self._needs_reset:
            return self.reset()
        action = jax.tree.map(lambda a, s: np.asarray(a, dtype=s.dtype), action, self._action_spec)
        self._state, timestep = self._step(self._state, action)
        timestep = jax.device_get(timestep)
        step_type = dm_env.StepType(int(timestep.step_type))
        if step_type == dm_env.StepType.FIRST:  # Only a wrapped (auto-resetting) env does this.
            return dm_env.restart(timestep.observation)
        self._needs_reset = step_type == dm_env.StepType.LAST
        return dm_env.TimeStep(
            step_type=step_type,
            reward=_as_spec(timestep.reward, self._reward_spec),
            discount=_as_spec(timestep.discount, self._discount_spec),
            observation=timestep.observation,
        )

    def observation_spec(self):
        return self._env.observation_spec()

    def action_spec(self):
        return self._action_spec

    def reward_spec(self):
        return self._reward_spec

    def discount_spec(self):
        return self._discount_spec


def _jitted(env: Environment) -> tuple[Callable, Callable]:
    """Jitted `reset` (which also splits the adapter's key) and `step` for `env`.

    Cached per environment (they are frozen, hashable dataclasses), so adapters
    over equal environments share compiled code.
    """
    try:
        hash(env)
    except TypeError:  # An unhashable environment: compile for this adapter only.
        return _make_jitted(env)
    return _jitted_cached(env)


def _make_jitted(env: Environment) -> tuple[Callable, Callable]:
    def reset(key):
        key, reset_key = jax.random.split(key)
        state, timestep = env.reset(reset_key)
        return key, state, timestep

    return jax.jit(reset), jax.jit(env.step)


_jitted_cached = functools.lru_cache(maxsize=64)(_make_jitted)


def _as_spec(value: Any, spec: Any) -> Any:
    """Casts `value` to its spec's dtype: numpy scalars for scalar specs."""

    def cast(v, s):
        v = np.asarray(v, dtype=s.dtype)
        return v[()] if v.shape == () else v

    return jax.tree.map(cast, value, spec)
