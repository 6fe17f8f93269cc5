"""MuJoCo Playground's environments (Zakka et al., 2025) for Anakin: `playground:CartpoleBalance`, ...

Every id in Playground's registry: the DeepMind Control Suite tasks
(`CartpoleBalance`, `CheetahRun`, ...), locomotion (`Go1JoystickFlatTerrain`,
...) and manipulation (`PandaPickCube`, ...), those added with a suite's
`register_environment` included. The locomotion and manipulation tasks load
robots from mujoco_menagerie, which Playground clones from GitHub on first use.

Keyword arguments are fields of the task's config
(`registry.get_default_config(task)`): `episode_length`, `action_repeat`,
`impl`, `ctrl_dt`, a locomotion task's `reward_config.scales.tracking_lin_vel`
(dotted, or nested as a dict), ... Any other name raises `ValueError` naming
the fields; a value of another type than the field's default too.

Physics. Playground's configs choose MJX's Warp implementation (`impl="warp"`),
made for NVIDIA GPUs; on CPU it compiles Warp kernels and stepped
CartpoleBalance at 13k steps/s (128 environments, 2 cores), where MJX's JAX
implementation steps it at 575k. So the adapter sets `impl="jax"` unless
`impl` is given ("warp" for a GPU, "cpp" for MuJoCo's C engine).

Episodes. Playground's environments have no time limit of their own: its
training wrapper (`wrap_for_brax_training`) adds one with brax's
`EpisodeWrapper` and resets with an auto-reset wrapper. The adapter keeps the
`EpisodeWrapper`, with the config's `episode_length` and `action_repeat`
(each step repeats the action `action_repeat` times, summing the rewards; the
episode is truncated once `episode_length` environment steps have passed), and
drops the auto-reset, as the brax adapter does (`brax_env.EpisodicEnvironment`
holds the rules both share): termination (`state.done`) gives discount 0,
truncation discount 1, and termination wins.

Observations are the task's own: a float32 vector, or a dict of them (the
locomotion tasks observe {"state", "privileged_state"}); actions are reals in
[-1, 1] of the task's `action_size`.
"""

import dataclasses
import functools
import subprocess
from collections.abc import Mapping
from typing import Any

import mujoco_playground
from ml_collections import ConfigDict
from mujoco import mjx
from mujoco_playground import dm_control_suite, locomotion, manipulation, registry
from mujoco_playground._src import mjx_env

from podracer.envs.suites.adapting import Check, Settings, check_settings
from podracer.envs.suites.brax_env import EpisodeWrapper, EpisodicEnvironment, check_episode_settings, with_episodes

DEFAULT_IMPL = "jax"
IMPLS = tuple(impl.value for impl in mjx.Impl)
# Settings with a rule of their own; the others must have their default's type (bool, int, float, str), or
# ml_collections checks them when the config is updated (tuples, lists, None).
CHECKS: dict[str, Check] = {"impl": (lambda value: value in IMPLS, f"one of {list(IMPLS)}")}


@dataclasses.dataclass(frozen=True)
class PlaygroundEnvironment(EpisodicEnvironment):
    """Playground's `task` with its config's `settings` and dm_env semantics; build it with `make`."""

    task: str
    settings: Settings = ()

    @property
    def episode_env(self) -> EpisodeWrapper:
        return _playground_env(self.task, self.settings)

    @property
    def playground_env(self) -> mujoco_playground.MjxEnv:
        """Playground's own environment (no time limit)."""
        return self.episode_env.unwrapped


def is_task(task: str) -> bool:
    return task in task_names()


def task_names() -> list[str]:
    return [*dm_control_suite.ALL_ENVS, *locomotion.ALL_ENVS, *manipulation.ALL_ENVS]


def make(task: str, **kwargs: Any) -> PlaygroundEnvironment:
    """The adapter of Playground's `task`; `kwargs` override fields of its config, `impl` defaulting to "jax".

    Builds the environment now, so a setting Playground rejects raises here.
    """
    defaults = _flatten(registry.get_default_config(task))
    accepted = f"its config's fields are {sorted(defaults)}"
    settings = dict(check_settings("playground", task, _flatten(kwargs), defaults, checks=CHECKS, accepted=accepted))
    if "impl" in defaults:
        settings.setdefault("impl", DEFAULT_IMPL)
    config = {**defaults, **settings}
    check_episode_settings(f"playground {task}", config["episode_length"], config["action_repeat"])
    env = PlaygroundEnvironment(task, tuple(sorted(settings.items())))
    env.episode_env  # noqa: B018 (builds it)
    return env


@functools.lru_cache(maxsize=32)
def _playground_env(task: str, settings: Settings) -> EpisodeWrapper:
    """Playground's `task`, built once per settings, inside `EpisodeWrapper` with its config's time limit."""
    config = registry.get_default_config(task)
    try:
        config.update_from_flattened_dict(dict(settings))
    except TypeError as error:  # ml_collections checks the fields check_settings leaves to it (tuples, lists).
        raise ValueError(f"playground {task}: {error}") from None
    try:
        env = registry.load(task, config=config)
    except subprocess.CalledProcessError as error:
        raise RuntimeError(
            f"playground {task} needs mujoco_menagerie, which Playground clones from GitHub into "
            f"{mjx_env.MENAGERIE_PATH} on first use, and the clone failed ({error}). Run it once with internet access, "
            f"or clone https://github.com/deepmind/mujoco_menagerie there at commit {mjx_env.MENAGERIE_COMMIT_SHA}."
        ) from error
    return with_episodes(env, config.episode_length, config.action_repeat)  # The task may have changed them (vision).


def _flatten(settings: Mapping | ConfigDict, prefix: str = "") -> dict[str, Any]:
    """Nested settings as {dotted name: value}, the form `ConfigDict.update_from_flattened_dict` takes."""
    flat = {}
    for key, value in settings.items():
        if isinstance(value, Mapping | ConfigDict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
