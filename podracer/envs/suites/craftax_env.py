"""Craftax (Matthews et al., ICML 2024) for Anakin: `craftax:Craftax-Classic-Symbolic-v1`, `craftax:Craftax-Pixels-v1`, ...

The tasks are Craftax's own names for `make_craftax_env_from_name(name,
auto_reset=False)`: Craftax-Classic-Symbolic-v1, Craftax-Classic-Pixels-v1,
Craftax-Symbolic-v1 and Craftax-Pixels-v1. Their environments have gymnax's
API (Craftax keeps its own copy of it), so they go through `gymnax_api`'s
adapter: Craftax's `reset_env` and no-auto-reset `step_env`, never its
auto-resetting `step`. Observations come as Craftax makes them: float32
vectors (Symbolic: 1345 for Classic, 8268 for Craftax) or float32
channels-last images (Pixels: 63x63x3 for Classic, 130x110x3 for Craftax).

Termination and time limit. Craftax's `done` is its `is_terminal`, which
mixes the time limit (`state.timestep >= params.max_timesteps`, 10000 steps
in Classic, 100000 in Craftax) with the natural ends: Classic's player
standing in lava or out of health, Craftax's player out of health or the
final boss beaten. The adapter asks Craftax's own `is_terminal` again with the
time limit lifted: that is termination; the rest of `done` is truncation.
A death on the last allowed step is thus a termination (discount 0).

Keyword arguments name fields of Craftax's env params (`max_timesteps`,
`day_length`, `always_diamond`, ...) or of its static env params, the
constructor's `StaticEnvParams` (`map_size`, `max_zombies`, ...: shapes of
the state, fixed at compilation).
"""

import dataclasses
import functools
from typing import Any

from craftax.craftax_env import make_craftax_env_from_name

from podracer.config.field_checks import INT32_MAX
from podracer.envs.spaces import space_to_spec
from podracer.envs.suites.gymnax_api import GymnaxApiEnvironment, Settings

__all__ = ["CraftaxEnvironment", "is_task", "make", "space_to_spec", "task_names"]

TASKS = ("Craftax-Classic-Symbolic-v1", "Craftax-Classic-Pixels-v1", "Craftax-Symbolic-v1", "Craftax-Pixels-v1")


class CraftaxEnvironment(GymnaxApiEnvironment):
    """The Craftax environment `task` with dm_env semantics; build it with `make`."""

    suite = "craftax"
    time_limit_fields = ("max_timesteps",)

    @classmethod
    def build(cls, task: str, constructor_kwargs: Settings) -> Any:
        return _craftax_env(task, constructor_kwargs)

    @classmethod
    def constructor_arguments(cls, task: str) -> dict[str, Any]:
        """The fields of the task's `StaticEnvParams`, which its constructor takes."""
        static = _craftax_env(task, ()).default_static_params()
        return {field.name: getattr(static, field.name) for field in dataclasses.fields(static)}

    def episode_end(self, before: Any, after: Any, done: Any, info: Any) -> tuple[Any, Any]:
        """Termination is Craftax's `is_terminal` without its time limit; truncation is the rest of `done`."""
        terminated = self.suite_env.is_terminal(after, self.params.replace(max_timesteps=INT32_MAX))
        return terminated, done & ~terminated


def is_task(task: str) -> bool:
    return task in TASKS


def task_names() -> list[str]:
    return list(TASKS)


def make(task: str, **kwargs: Any) -> CraftaxEnvironment:
    """The adapter of Craftax's `task`; `kwargs` set env params or static env params fields.

    Raises `ValueError` naming the accepted names for any other keyword.
    """
    return CraftaxEnvironment.make(task, **kwargs)


@functools.lru_cache(maxsize=16)
def _craftax_env(task: str, static_settings: Settings) -> Any:
    """Craftax's environment object without auto-reset, built once per task and static env params."""
    env = make_craftax_env_from_name(task, auto_reset=False)
    if static_settings:
        env = type(env)(env.default_static_params().replace(**dict(static_settings)))
    return env
