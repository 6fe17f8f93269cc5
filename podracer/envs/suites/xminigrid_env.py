"""XLand-MiniGrid's environments (Nikulin et al., 2024) for Anakin: `xminigrid:MiniGrid-Empty-8x8`, ...

Every id in `xminigrid.registered_environments()` (the MiniGrid ports and the
XLand-MiniGrid meta-RL worlds), through stoa's `XMiniGridToStoa` and
`podracer.envs.suites.stoa_env`. XLand-MiniGrid never resets by itself;
reaching the goal terminates (discount 0, reward 1 - 0.9 * steps / max_steps)
and `max_steps` truncates (discount 1).

Observations are the agent's egocentric view `[view_size, view_size, 2]`
(tile, colour) as float32, stoa's cast of XLand-MiniGrid's uint8.

Keyword arguments are fields of the task's env params (`max_steps`,
`view_size`, `height`, `width`, ...), set with `params.replace` on the
registered task's params. The XLand worlds take their rules from `ruleset`;
the default is the empty ruleset (sample one from a benchmark of
`xminigrid.load_benchmark` to train on one task).
"""

import dataclasses
from typing import Any

import xminigrid

from podracer.envs.suites.adapting import check_settings
from podracer.envs.suites.stoa_env import StoaEnvironment
from podracer.envs.suites.stoa_modules import stoa_module

XMiniGridToStoa = stoa_module("env_adapters.xminigrid").XMiniGridToStoa

_COUNTS = ("max_steps", "height", "width", "view_size")  # Settings that must be whole numbers >= 1.


def is_task(task: str) -> bool:
    return task in xminigrid.registered_environments()


def task_names() -> list[str]:
    return list(xminigrid.registered_environments())


def make(task: str, **kwargs: Any) -> StoaEnvironment:
    """The adapter of XLand-MiniGrid's `task`; `kwargs` replace fields of its env params (`max_steps`, ...).

    Raises `ValueError` naming the accepted names for any other keyword.
    """
    _, params = xminigrid.make(task)
    defaults = {field.name: getattr(params, field.name) for field in dataclasses.fields(params)}
    env = StoaEnvironment(_build, task, check_settings("xminigrid", task, kwargs, defaults, _COUNTS))
    env.stoa_env  # noqa: B018 (builds it)
    return env


def _build(task: str, **kwargs: Any) -> XMiniGridToStoa:
    env, params = xminigrid.make(task)
    return XMiniGridToStoa(env, params.replace(**kwargs))
