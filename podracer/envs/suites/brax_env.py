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

The physics backend defaults to "spring": on CPU it steps the small tasks 2 to
9 times faster than brax's own default, "generalized", and compiles no slower
(measured in the commit that chose it). Pass `backend="generalized"` (or
"positional", "mjx") for the more exact pipelines; brax tunes each task's
physics time step per backend, so the dynamics differ slightly.
"""

import contextlib
import dataclasses
import functools
import io
import warnings
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

from podracer.config.field_checks import is_whole_number
from podracer.envs import timestep as ts
from podracer.envs.base import Environment

# Importing brax prints "Failed to import warp" (mujoco.mjx, without its GPU extra) and warns that jaxopt is
# deprecated; neither is the user's concern.
with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
    warnings.filterwarnings("ignore", "JAXopt is no longer maintained", DeprecationWarning)
    import brax.envs
    from brax.envs.wrappers.training import EpisodeWrapper

DEFAULT_BACKEND = "spring"

Settings = tuple[tuple[str, Any], ...]  # Sorted (name, value) pairs: hashable keyword arguments.


@dataclasses.dataclass(frozen=True)
class BraxEnvironment(Environment):
    """Brax's `task` with episodes of `episode_length` steps and dm_env semantics; build it with `make`."""

    task: str
    episode_length: int = 1000
    action_repeat: int = 1
    env_kwargs: Settings = (("backend", DEFAULT_BACKEND),)

    def __post_init__(self):
        for name in ("episode_length", "action_repeat"):
            value = getattr(self, name)
            if not is_whole_number(value, 1):
                raise ValueError(f"brax {self.task}: {name} must be a positive integer, got {value!r}.")

    @property
    def brax_env(self) -> EpisodeWrapper:
        """Brax's environment inside its `EpisodeWrapper` (shared by equal adapters)."""
        return _brax_env(self.task, self.episode_length, self.action_repeat, self.env_kwargs)

    def reset(self, key: chex.PRNGKey) -> tuple[brax.envs.State, ts.TimeStep]:
        state = self.brax_env.reset(key)
        return state, ts.restart(state.obs.astype(jnp.float32))

    def step(self, state: brax.envs.State, action: chex.Array) -> tuple[brax.envs.State, ts.TimeStep]:
        state = self.brax_env.step(state, action)
        truncated = state.info["truncation"] > 0
        terminated = (state.done > 0) & ~truncated
        return state, ts.transition(state.obs.astype(jnp.float32), state.reward, terminated, truncated)

    @functools.cached_property
    def _observation_size(self) -> int:
        return jax.eval_shape(self.brax_env.reset, jax.random.key(0)).obs.shape[-1]

    def observation_spec(self) -> specs.Array:
        return specs.Array((self._observation_size,), np.float32, name="observation")

    def action_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((self.brax_env.action_size,), np.float32, -1.0, 1.0, name="action")


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
    return EpisodeWrapper(_VaryLikeTheState(env), episode_length, action_repeat)


class _VaryLikeTheState(brax.envs.Wrapper):
    """Makes every leaf brax's `step` returns vary over the device axes the input state varies over.

    Under `shard_map` (Anakin) the state varies over the device axis, but a leaf
    computed from constants does not (inverted_pendulum's reward is always 1.0),
    and `EpisodeWrapper`'s `lax.scan` over action repeats then fails, since its
    carry must keep one type. Outside any mesh there is nothing to change.
    """

    def step(self, state: brax.envs.State, action: jax.Array) -> brax.envs.State:
        axes = frozenset().union(*(_varying_axes(leaf) for leaf in jax.tree.leaves((state, action))))

        def vary(leaf):
            missing = tuple(sorted(axes - _varying_axes(leaf)))
            return jax.lax.pcast(leaf, missing, to="varying") if missing else leaf

        return jax.tree.map(vary, self.env.step(state, action))


def _varying_axes(leaf: jax.Array) -> frozenset:
    """The mesh axes a traced value varies over inside `shard_map` (empty outside one)."""
    return jax.typeof(leaf).mat.varying
