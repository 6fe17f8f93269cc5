"""One adapter for every suite with gymnax's environment API: gymnax itself, Craftax and POPGym Arcade.

These suites' environments share gymnax's shape: an environment object with
`default_params` (a dataclass of settings), `reset_env(key, params)` and
`step_env(key, state, action, params)`, the transition that never resets,
and gymnax-style `observation_space` / `action_space`. Their auto-resetting
`step` returns the next episode's first observation in the call that ends
an episode; podracer needs dm_env's contract instead (the LAST timestep
carries the final observation, `AutoReset` starts the next episode one step
later), so `GymnaxApiEnvironment` calls `reset_env` and `step_env` directly.

What differs between the suites is filled in by a subclass in each suite's
module: how to build the environment object (`build`), which constructor
arguments it takes (`constructor_arguments`), which env params fields can be
set (`params_fields`) and how to tell termination from truncation
(`episode_end`): gymnax 1.x separates them itself, Craftax and POPGym Arcade
return one `done` for both.

The adapter's state carries a PRNG key, split on every step, since many of
these transitions are stochastic. Keyword arguments (`config.env.kwargs`)
name env params fields or constructor arguments; `make` checks them.

This module imports none of the suites (Craftax does not depend on gymnax):
`podracer.envs.spaces.space_to_spec` reads spaces by their attributes
(gymnax's and Craftax's copies of them alike).
"""

import abc
import dataclasses
import functools
from typing import Any, ClassVar, Self

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from podracer.envs import timestep as ts
from podracer.envs.base import Environment
from podracer.envs.spaces import space_to_spec
from podracer.envs.suites.adapting import Settings, check_settings, hashable, strongly_typed


@struct.dataclass
class GymnaxApiState:
    env_state: Any  # The suite's own state.
    key: chex.PRNGKey  # Split on every step for the suite's stochastic transitions.


@dataclasses.dataclass(frozen=True)
class GymnaxApiEnvironment(Environment):
    """A gymnax-API environment `task` with dm_env semantics; build it with the subclass's `make`."""

    task: str
    constructor_kwargs: Settings = ()
    params_overrides: Settings = ()

    suite: ClassVar[str]  # The suite's prefix, for messages.
    time_limit_fields: ClassVar[tuple[str, ...]] = ()  # Env params fields that are episode lengths (whole, >= 1).

    @classmethod
    @abc.abstractmethod
    def build(cls, task: str, constructor_kwargs: Settings) -> Any:
        """The suite's environment object for `task` (cached: equal adapters share it)."""

    @classmethod
    @abc.abstractmethod
    def constructor_arguments(cls, task: str) -> dict[str, Any]:
        """The constructor arguments `make` accepts for `task`: name -> default (`inspect.Parameter.empty` if none).

        A value given for an argument must have its default's type (where that is a bool, int, float or str).
        """

    @classmethod
    def params_fields(cls, default_params: Any) -> list[str]:
        """The env params fields `make` accepts: all of them, unless a suite's environments ignore some."""
        return [field.name for field in dataclasses.fields(default_params)]

    @abc.abstractmethod
    def episode_end(self, before: Any, after: Any, done: Any, info: Any) -> tuple[Any, Any]:
        """`(terminated, truncated)` of a transition from state `before` to `after` that `step_env` ended with `done`.

        Termination wins when the episode both terminates and reaches its time limit on one step.
        """

    @property
    def suite_env(self) -> Any:
        """The suite's environment object."""
        return self.build(self.task, self.constructor_kwargs)

    @property
    def params(self) -> Any:
        """The suite's default env params with this adapter's overrides."""
        defaults = self.suite_env.default_params
        overrides = {name: _like(value, getattr(defaults, name)) for name, value in self.params_overrides}
        return defaults.replace(**overrides)

    def reset(self, key: chex.PRNGKey) -> tuple[GymnaxApiState, ts.TimeStep]:
        key, reset_key = jax.random.split(key)
        observation, env_state = self.suite_env.reset_env(reset_key, self.params)
        return GymnaxApiState(strongly_typed(env_state), key), ts.restart(observation)

    def step(self, state: GymnaxApiState, action: chex.Array) -> tuple[GymnaxApiState, ts.TimeStep]:
        key, step_key = jax.random.split(state.key)
        observation, env_state, reward, done, info = self.suite_env.step_env(
            step_key, state.env_state, action, self.params
        )
        terminated, truncated = self.episode_end(state.env_state, env_state, done, info)
        env_state = strongly_typed(env_state)
        return GymnaxApiState(env_state, key), ts.transition(observation, reward, terminated, truncated)

    @functools.cached_property
    def _observation_shapes(self) -> Any:
        observation, _ = jax.eval_shape(self.suite_env.reset_env, jax.random.key(0), self.params)
        return observation

    def observation_spec(self) -> Any:
        """The suite's observation space, with the shape and dtype of the observations it actually returns.

        Some spaces declare another shape or dtype than their observations have
        (gymnax's Catch-bsuite says int32 for float32 boards, several POPGym
        Arcade games 256x256 for 128x128 images); a spec must describe what the
        environment returns.
        """
        observations = self._observation_shapes
        with jax.ensure_compile_time_eval():  # Concrete bounds, even when asked inside a jitted function.
            return space_to_spec(self.suite_env.observation_space(self.params), "observation", like=observations)

    def action_spec(self) -> Any:
        with jax.ensure_compile_time_eval():
            return space_to_spec(self.suite_env.action_space(self.params), "action")

    @classmethod
    def make(cls, task: str, **kwargs: Any) -> Self:
        """The adapter of `task`; `kwargs` set env params fields or constructor arguments.

        Raises `ValueError` naming the accepted names for any other keyword, or
        when a value has another type than the setting's default. A constructor
        argument's is checked before the constructor runs, which would say less.
        """
        constructor = cls.constructor_arguments(task)
        # None is often a constructor's "not given" (gymnax FrozenLake's map_name): no type to check.
        typed = {name: value for name, value in kwargs.items() if not (name in constructor and value is None)}
        check_settings(cls.suite, task, {k: v for k, v in typed.items() if k in constructor}, constructor)
        constructor_kwargs = tuple(sorted((k, hashable(v)) for k, v in kwargs.items() if k in constructor))
        default_params = cls._built(task, constructor_kwargs).default_params
        fields = cls.params_fields(default_params)
        accepted = f"its env params are {fields}" + (
            f" and its constructor takes {list(constructor)}" if constructor else ""
        )
        defaults = {**constructor, **{name: getattr(default_params, name) for name in fields}}
        settings = check_settings(cls.suite, task, typed, defaults, cls.time_limit_fields, accepted=accepted)
        params_overrides = tuple((name, value) for name, value in settings if name in fields)
        return cls(task, constructor_kwargs, params_overrides)

    @classmethod
    def _built(cls, task: str, constructor_kwargs: Settings) -> Any:
        """`build`, with a constructor's own complaint about its arguments as a `ValueError` naming them."""
        try:
            return cls.build(task, constructor_kwargs)
        except (TypeError, ValueError, KeyError, IndexError, AssertionError) as error:
            if not constructor_kwargs:
                raise
            settings = ", ".join(f"{name}={value!r}" for name, value in constructor_kwargs)
            raise ValueError(
                f"{cls.suite} {task} cannot be built with {settings}: {type(error).__name__}: {error}"
            ) from error


def _like(value: Any, default: Any) -> Any:
    """An override as an array where the suite's default is one (gymnax Acrobot's `available_torque`)."""
    return jnp.asarray(value, default.dtype) if isinstance(default, jax.Array | np.ndarray) else value
