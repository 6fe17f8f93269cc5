"""Brax's environments (Freeman et al., 2021) for Anakin: `brax:inverted_pendulum`, `brax:ant`, ...

Every name in brax's registry (`brax.envs.get_environment`, those added with
`brax.envs.register_environment` included). Actions are continuous in
[-1, 1] (brax scales them to the actuators' ranges); observations are float32
vectors.

Episodes are brax's own bookkeeping, `EpisodeWrapper`: it repeats each action
`action_repeat` times (summing the rewards), counts brax steps, and ends the
episode once `episode_length` of them have passed, setting `info["truncation"]`
where the time limit, not the task, ended it. So the LAST timestep has discount 1 on
truncation and 0 on termination (brax leaves `truncation` at 0 when the task
ends on the last allowed step: termination wins). Brax's `AutoResetWrapper` is
not used: podracer's `AutoReset` starts the next episode one step after LAST.
`EpisodicEnvironment` is that bookkeeping, shared with MuJoCo Playground's
adapter (`playground_env`), whose environments Playground trains inside the
same `EpisodeWrapper`.

The physics backend defaults to "spring": on CPU it steps the small tasks 2 to
9 times faster than brax's own default, "generalized", and compiles no slower
(measured in the commit that chose it). Pass `backend="generalized"` (or
"positional", "mjx") for the more exact pipelines; brax tunes each task's
physics time step per backend, so the dynamics differ slightly.
"""

import abc
import contextlib
import dataclasses
import functools
import io
import warnings
from collections.abc import Mapping
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

from podracer.config.field_checks import is_whole_number
from podracer.envs import timestep as ts
from podracer.envs.base import Environment
from podracer.envs.suites.adapting import Settings

# Importing brax prints "Failed to import warp" (mujoco.mjx, without its GPU extra) and warns that jaxopt is
# deprecated; neither is the user's concern.
with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
    warnings.filterwarnings("ignore", "JAXopt is no longer maintained", DeprecationWarning)
    import brax.envs
    from brax.envs.wrappers.training import EpisodeWrapper

DEFAULT_BACKEND = "spring"


@dataclasses.dataclass(frozen=True)
class EpisodicEnvironment(Environment):
    """dm_env semantics over an environment inside brax's `EpisodeWrapper` (brax's own or MuJoCo Playground's).

    Observations are the environment's own (an array or a dict of arrays),
    their floating-point leaves float32; actions are reals in [-1, 1]. The
    state is the environment's, less its zero-size arrays (`_without_empty`).
    """

    @property
    @abc.abstractmethod
    def episode_env(self) -> EpisodeWrapper:
        """The environment inside `EpisodeWrapper`, built by `with_episodes` (shared by equal adapters)."""

    def reset(self, key: chex.PRNGKey) -> tuple[Any, ts.TimeStep]:
        state = self.episode_env.reset(key)
        return _without_empty(state), ts.restart(_float32(state.obs))

    def step(self, state: Any, action: chex.Array) -> tuple[Any, ts.TimeStep]:
        state = self.episode_env.step(_with_empty(state, self._state_shapes), action)
        truncated = state.info["truncation"] > 0
        terminated = (state.done > 0) & ~truncated
        return _without_empty(state), ts.transition(_float32(state.obs), state.reward, terminated, truncated)

    @functools.cached_property
    def _state_shapes(self) -> Any:
        return jax.eval_shape(self.episode_env.reset, jax.random.key(0))

    @functools.cached_property
    def _observation_shapes(self) -> Any:
        return jax.eval_shape(lambda key: self.reset(key)[1].observation, jax.random.key(0))

    def observation_spec(self) -> Any:
        """`specs.Array`s of the observations reset returns: one named "observation", or a dict of them by key."""
        return _spec(self._observation_shapes, "observation")

    def action_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((self.episode_env.action_size,), np.float32, -1.0, 1.0, name="action")


@dataclasses.dataclass(frozen=True)
class BraxEnvironment(EpisodicEnvironment):
    """Brax's `task` with episodes of `episode_length` steps and dm_env semantics; build it with `make`."""

    task: str
    episode_length: int = 1000
    action_repeat: int = 1
    env_kwargs: Settings = (("backend", DEFAULT_BACKEND),)

    def __post_init__(self):
        check_episode_settings(f"brax {self.task}", self.episode_length, self.action_repeat)

    @property
    def brax_env(self) -> EpisodeWrapper:
        """Brax's environment inside its `EpisodeWrapper` (shared by equal adapters)."""
        return _brax_env(self.task, self.episode_length, self.action_repeat, self.env_kwargs)

    episode_env = brax_env


def is_task(task: str) -> bool:
    return task in brax.envs._envs


def task_names() -> list[str]:
    return sorted(brax.envs._envs)


def make(task: str, episode_length: int = 1000, action_repeat: int = 1, **kwargs: Any) -> BraxEnvironment:
    """The adapter of brax's `task`; `kwargs` (`backend`, `n_frames`, ...) go to its constructor.

    Builds the brax environment now, so a keyword its constructor rejects raises here.
    """
    kwargs.setdefault("backend", DEFAULT_BACKEND)
    env = BraxEnvironment(task, episode_length, action_repeat, tuple(sorted(kwargs.items())))
    env.brax_env  # noqa: B018 (builds it)
    return env


@functools.lru_cache(maxsize=32)
def _brax_env(task: str, episode_length: int, action_repeat: int, env_kwargs: Settings) -> EpisodeWrapper:
    with warnings.catch_warnings():  # Brax's notice that MJX is its maintained successor, once per build.
        warnings.filterwarnings("ignore", "Brax System, piplines and environments are not actively", UserWarning)
        env = brax.envs.get_environment(task, **dict(env_kwargs))
    return with_episodes(env, episode_length, action_repeat)


def with_episodes(env: Any, episode_length: int, action_repeat: int) -> EpisodeWrapper:
    """`env` (brax's `Env` interface: `reset`, `step`, `action_size`) in `EpisodeWrapper`, without auto-reset."""
    return EpisodeWrapper(_VaryLikeTheState(env), episode_length, action_repeat)


def check_episode_settings(name: str, episode_length: Any, action_repeat: Any) -> None:
    """`ValueError` unless both are positive integers; `name` says whose they are ("brax ant")."""
    for setting, value in (("episode_length", episode_length), ("action_repeat", action_repeat)):
        if not is_whole_number(value, 1):
            raise ValueError(f"{name}: {setting} must be a positive integer, got {value!r}.")


def _without_empty(state: Any) -> Any:
    """The state with None for its zero-size arrays (MJX's data has several: `act` of a model without activations).

    Anakin's training state leaves them out so: orbax refuses to checkpoint
    zero-size arrays, and XLA returns them unsharded, so that the next dispatch
    over several devices would refuse them.
    """
    return jax.tree.map(lambda x: None if jnp.size(x) == 0 else x, state)


def _with_empty(state: Any, shapes: Any) -> Any:
    """Undoes `_without_empty`, with the zero-size arrays' shapes and dtypes from `shapes` (the state's)."""
    leaves, structure = jax.tree.flatten(shapes, is_leaf=_is_none)  # None where the environment itself has None.
    filled = (
        jnp.zeros(s.shape, s.dtype) if s is not None and s.size == 0 else x
        for x, s in zip(jax.tree.leaves(state, is_leaf=_is_none), leaves, strict=True)
    )
    return structure.unflatten(list(filled))


def _is_none(x: Any) -> bool:
    return x is None


def _float32(observation: Any) -> Any:
    """Floating-point observation leaves as float32 (they are float64 where JAX runs with x64)."""
    return jax.tree.map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, observation)


def _spec(shapes: Any, name: str) -> Any:
    """The `specs.Array` of a `jax.ShapeDtypeStruct`, or a dict of them (sorted keys) for a dict of them."""
    if isinstance(shapes, Mapping):
        return {key: _spec(shapes[key], key) for key in sorted(shapes)}
    return specs.Array(shapes.shape, shapes.dtype, name=name)


class _VaryLikeTheState(brax.envs.Wrapper):
    """Makes every leaf the wrapped `step` returns (brax's or Playground's) vary over the axes the input state does.

    Under `shard_map` (Anakin) the state varies over the device axis, but a leaf
    computed from constants does not (inverted_pendulum's reward is always 1.0),
    and `EpisodeWrapper`'s `lax.scan` over action repeats then fails, since its
    carry must keep one type. Outside any mesh there is nothing to change.
    """

    def step(self, state: Any, action: jax.Array) -> Any:
        axes = frozenset().union(*(_varying_axes(leaf) for leaf in jax.tree.leaves((state, action))))

        def vary(leaf):
            missing = tuple(sorted(axes - _varying_axes(leaf)))
            return jax.lax.pcast(leaf, missing, to="varying") if missing else leaf

        return jax.tree.map(vary, self.env.step(state, action))


def _varying_axes(leaf: jax.Array) -> frozenset:
    """The mesh axes a traced value varies over inside `shard_map` (empty outside one)."""
    return jax.typeof(leaf).mat.varying
