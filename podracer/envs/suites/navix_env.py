"""Navix's grid worlds (Pignatelli et al., 2024) for Anakin: `navix:Navix-Empty-5x5-v0`, `navix:Navix-DoorKey-8x8-v0`, ...

Every id in `navix.registry()`, through stoa's `NavixToStoa` and
`podracer.envs.suites.stoa_env`. Navix's own `step` resets an environment on
the step *after* one that ended an episode, never within it, so the LAST
timestep keeps the final observation (podracer's `AutoReset` starts the next
episode, and never steps a finished one). Reaching the goal terminates
(discount 0); `max_steps` (navix.make's default, 100, whatever the grid's size)
truncates (discount 1).

Observations are navix's symbolic grids `[H, W, 3]` (object, colour, state)
as float32, stoa's cast of navix's uint8. Navix declares them in [0, 8], but
the agent's tag is 10 and some tasks' cells hold 254; so the spec gives
integer observations the bounds of their dtype (0 to 255), which they keep.

Keyword arguments are fields of navix's environment other than its size and
spaces: `max_steps`, `gamma`, `penality_coeff`, `observation_fn`, `reward_fn`,
`termination_fn`, ..., and a task's own (`n_obstacles`, ...).
"""

import dataclasses
from typing import Any

import jax.numpy as jnp
import navix

from podracer.envs.suites.adapting import check_settings
from podracer.envs.suites.stoa_env import StoaEnvironment
from podracer.envs.suites.stoa_modules import stoa_module

NavixToStoa = stoa_module("env_adapters.navix").NavixToStoa

_FIXED = ("height", "width", "observation_space", "action_space", "reward_space")  # Set by the task id and navix.


def is_task(task: str) -> bool:
    return task in navix.registry()


def task_names() -> list[str]:
    return list(navix.registry())


def make(task: str, **kwargs: Any) -> StoaEnvironment:
    """The adapter of navix's `task`; `kwargs` set fields of navix's environment (`max_steps`, ...).

    Raises `ValueError` naming the accepted names for any other keyword.
    """
    default = navix.make(task)
    accepted = {f.name: getattr(default, f.name) for f in dataclasses.fields(default) if f.name not in _FIXED}
    env = StoaEnvironment(_build, task, check_settings("navix", task, kwargs, accepted, ("max_steps",)))
    try:
        env.stoa_env  # noqa: B018 (builds it)
    except TypeError as error:  # A field the task's registration sets itself (Navix-Empty's random_start).
        raise ValueError(
            f"navix {task} does not accept {sorted(kwargs)} ({error}): it accepts {sorted(accepted)}"
        ) from None
    return env


def _build(task: str, **kwargs: Any) -> NavixToStoa:
    """stoa's adapter of navix's `task`, its integer observations declared over their dtype's whole range."""
    env = navix.make(task, **kwargs)
    space = env.observation_space
    if jnp.issubdtype(space.dtype, jnp.integer):
        info = jnp.iinfo(space.dtype)
        env = env.replace(observation_space=space.replace(minimum=jnp.asarray(info.min), maximum=jnp.asarray(info.max)))
    return NavixToStoa(env)
