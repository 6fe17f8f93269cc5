"""gymnax's environments (Lange, 2022) for Anakin: `gymnax:CartPole-v1`, `gymnax:Breakout-MinAtar`, ...

Every id in `gymnax.registered_envs` works, those registered at run time with
`gymnax.register` included. gymnax's own `step` resets an environment in the
call that ends its episode and returns the new episode's first observation;
podracer needs dm_env's contract instead (the LAST timestep carries the final
observation, `AutoReset` starts the next episode one step later). So the
adapter calls gymnax's transition, `step_env`, and `reset_env` directly, and
never resets by itself.

Termination and time limit. Since gymnax 1.0 the flag `step_env` returns is
natural termination only (the pole fell, the game was lost, the goal was
reached, a bandit's single step ended; never the time limit), and the time
limit is gymnax's `is_truncated`, `state.time >= params.max_steps_in_episode`
on the stepped state; gymnax's `step` derives its `terminated` and `truncated`
the same way. `timestep.from_flags` then gives discount 0 on termination and 1
on truncation, termination winning when both happen on one step.
(DeepSea-bsuite's running bsuite metrics in its state, which its `step` keeps
across resets, restart with every episode here.)

The adapter's state carries a PRNG key, split on every step, since many
gymnax transitions are stochastic (MinAtar's spawns, the bandits' rewards).
Keyword arguments name fields of gymnax's env params (`max_steps_in_episode`,
`gravity`, ...) or arguments of the gymnax environment's constructor
(`rows` of Catch-bsuite, `use_minimal_action_set` of MinAtar, ...).
"""

import dataclasses
import functools
import inspect
from typing import Any

import chex
import gymnax
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs
from flax import struct
from gymnax.environments import spaces

from podracer.config.field_checks import is_whole_number, matches_default_type
from podracer.envs import timestep as ts
from podracer.envs.base import Environment

Settings = tuple[tuple[str, Any], ...]  # Sorted (name, value) pairs: hashable keyword arguments.


@struct.dataclass
class GymnaxState:
    env_state: Any  # gymnax's own state.
    key: chex.PRNGKey  # Split on every step for gymnax's stochastic transitions.


@dataclasses.dataclass(frozen=True)
class GymnaxEnvironment(Environment):
    """The gymnax environment `task` with dm_env semantics; build it with `make`."""

    task: str
    constructor_kwargs: Settings = ()
    params_overrides: Settings = ()

    @property
    def gymnax_env(self) -> Any:
        """gymnax's environment object (shared by equal adapters)."""
        return _gymnax_env(self.task, self.constructor_kwargs)

    @property
    def params(self) -> Any:
        """gymnax's default env params with this adapter's overrides."""
        defaults = self.gymnax_env.default_params
        overrides = {name: _like(value, getattr(defaults, name)) for name, value in self.params_overrides}
        return defaults.replace(**overrides)

    def reset(self, key: chex.PRNGKey) -> tuple[GymnaxState, ts.TimeStep]:
        key, reset_key = jax.random.split(key)
        observation, env_state = self.gymnax_env.reset_env(reset_key, self.params)
        return GymnaxState(jax.tree.map(_strong_array, env_state), key), ts.restart(observation)

    def step(self, state: GymnaxState, action: chex.Array) -> tuple[GymnaxState, ts.TimeStep]:
        key, step_key = jax.random.split(state.key)
        env, params = self.gymnax_env, self.params
        observation, env_state, reward, terminated, _ = env.step_env(step_key, state.env_state, action, params)
        truncated = env.is_truncated(env_state, params)
        return GymnaxState(env_state, key), ts.transition(observation, reward, terminated, truncated)

    @functools.cached_property
    def _observation_shapes(self) -> Any:
        observation, _ = jax.eval_shape(self.gymnax_env.reset_env, jax.random.key(0), self.params)
        return observation

    def observation_spec(self) -> Any:
        """gymnax's observation space, with the shape and dtype of the observations it actually returns.

        A few gymnax spaces declare another dtype than their observations have
        (Catch-bsuite's space says int32, its boards are float32); a spec must
        describe what the environment returns.
        """
        observations = self._observation_shapes
        with jax.ensure_compile_time_eval():  # Concrete bounds, even when asked inside a jitted function.
            return space_to_spec(self.gymnax_env.observation_space(self.params), "observation", like=observations)

    def action_spec(self) -> Any:
        with jax.ensure_compile_time_eval():
            return space_to_spec(self.gymnax_env.action_space(self.params), "action")


def is_task(task: str) -> bool:
    return task in gymnax.registered_envs


def task_names() -> list[str]:
    return list(gymnax.registered_envs)


def make(task: str, **kwargs: Any) -> GymnaxEnvironment:
    """The adapter of gymnax's `task`; `kwargs` set env params fields or constructor arguments.

    Raises `ValueError` naming the accepted names for any other keyword.
    """
    constructor = _constructor_arguments(task)
    ours = {name: _hashable(value) for name, value in kwargs.items()}
    constructor_kwargs = tuple(sorted((k, v) for k, v in ours.items() if k in constructor))
    default_params = _gymnax_env(task, constructor_kwargs).default_params
    fields = [field.name for field in dataclasses.fields(default_params)]
    unknown = sorted(set(ours) - set(constructor) - set(fields))
    if unknown:
        raise ValueError(
            f"gymnax {task} has no setting {', '.join(unknown)}: its env params are {fields}"
            + (f" and its constructor takes {constructor}" if constructor else "")
        )
    for name, value in ours.items():
        if name in fields:
            _check_param(task, name, value, getattr(default_params, name))
    params_overrides = tuple(sorted((k, v) for k, v in ours.items() if k in fields))
    return GymnaxEnvironment(task, constructor_kwargs, params_overrides)


def space_to_spec(space: spaces.Space, name: str, like: Any = None) -> Any:
    """The dm_env spec of a gymnax space: Discrete -> DiscreteArray (int32), Box -> BoundedArray, Dict -> dict.

    `like` (a pytree of arrays or `jax.ShapeDtypeStruct`s matching the space)
    overrides the space's shape and dtype with those of real values.
    """
    if isinstance(space, spaces.Dict):
        return {key: space_to_spec(sub, key, None if like is None else like[key]) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Discrete):
        if like is None or (like.shape == () and jnp.issubdtype(like.dtype, jnp.integer)):
            return specs.DiscreteArray(space.n, dtype=np.int32 if like is None else like.dtype, name=name)
        return specs.BoundedArray(like.shape, like.dtype, 0, space.n - 1, name=name)
    if isinstance(space, spaces.Box):
        shape, dtype = (tuple(space.shape), np.dtype(space.dtype)) if like is None else (like.shape, like.dtype)
        low, high = (np.broadcast_to(np.asarray(bound).astype(dtype), shape) for bound in (space.low, space.high))
        return specs.BoundedArray(shape, dtype, low, high, name=name)
    raise NotImplementedError(f"podracer cannot convert gymnax's {type(space).__name__} space {space!r} to a spec.")


@functools.lru_cache(maxsize=64)
def _gymnax_env(task: str, constructor_kwargs: Settings) -> Any:
    """gymnax's environment object, built once per task and constructor arguments."""
    try:
        env, _ = gymnax.make(task, **dict(constructor_kwargs))
    except OSError as error:  # MNISTBandit-bsuite downloads MNIST when it is built.
        raise RuntimeError(
            f"gymnax could not build {task}: {error}. MNISTBandit-bsuite downloads the MNIST files into /tmp/mnist "
            "when it is first built: run it once on a machine with internet access, or copy train-images-idx3-ubyte.gz, "
            "train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz there."
        ) from error
    return env


def _constructor_arguments(task: str) -> list[str]:
    """The named arguments of the factory gymnax registered for `task` (its environment class)."""
    factory = gymnax.registration._registry[task]
    parameters = inspect.signature(factory).parameters.values()
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def _strong_array(leaf: Any) -> jax.Array:
    """A leaf of gymnax's reset state (often a Python number: `time=0`) as the typed array its steps produce.

    So the state's types do not change on the first step (a `lax.scan` carry) and
    `AutoReset` can select between a reset and a stepped state.
    """
    return jnp.asarray(leaf, jnp.result_type(leaf))


def _check_param(task: str, name: str, value: Any, default: Any) -> None:
    """`ValueError` unless an env params override has its default's type (gymnax checks none); episodes last >= 1 step."""
    if name == "max_steps_in_episode":
        ok, wanted = is_whole_number(value, 1), "a whole number >= 1"
    elif (typed := matches_default_type(value, default)) is not None:
        ok, wanted = typed
    else:  # An array (Acrobot's available_torque): `_like` converts it.
        return
    if not ok:
        raise ValueError(f"gymnax {task}'s {name} must be {wanted}, got {value!r}.")


def _like(value: Any, default: Any) -> Any:
    """An override as an array where gymnax's default is one (Acrobot's `available_torque`)."""
    return jnp.asarray(value, default.dtype) if isinstance(default, jax.Array | np.ndarray) else value


def _hashable(value: Any) -> Any:
    """Lists (from a config) as tuples, so the adapter stays hashable and jitted functions can be cached."""
    return tuple(_hashable(v) for v in value) if isinstance(value, list | tuple) else value
