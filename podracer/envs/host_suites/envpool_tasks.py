"""envpool's tasks and their options: which ids exist, Atari's defaults, and the options checked before `envpool.make`.

`make_envpool_env` (`podracer.envs.host_suites.envpool_env`) builds its pools with the
options `pool_options` gives. Atari tasks get the standard preprocessing
(`ATARI_DEFAULTS`); any keyword that is not our `sticky_actions` option goes to
`envpool.make` unchanged (`num_threads`, for instance: envpool's worker
threads, 0 lets it choose; `max_episode_steps`). Rewards are the game's own;
clipping them is the learner's business (`config.agent.reward_clip`), so
episode returns always report the real score.

envpool reports an option of the wrong type in a message of many lines and
checks no range (it aborts the process on `num_threads=-1`, and runs with
`max_episode_steps=-1` or `frame_skip=0`), so `pool_options` checks both; an
unknown option envpool names itself. envpool itself is imported on first use:
importing it registers every task, which takes seconds.
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from podracer.config.field_checks import is_number
from podracer.envs.suites.adapting import Check, check_settings, whole_number

ATARI_DEFAULTS: dict[str, Any] = {
    "img_height": 84,  # Observations: 84x84 grey frames,
    "img_width": 84,
    "gray_scale": True,
    "stack_num": 4,  # the last 4 stacked: shape (4, 84, 84) uint8.
    "frame_skip": 4,  # Each action repeated for 4 frames (max-pooled over the last two).
    "noop_max": 30,  # Up to 30 random no-ops after a reset.
    "full_action_space": False,  # The game's minimal action set.
    "episodic_life": False,  # An episode is a whole game, not one life.
    "max_episode_steps": 27000,  # Agent steps: 108000 frames, 30 minutes of play.
    # Our option (handled here, not by envpool):
    "sticky_actions": False,  # True: repeat_action_probability 0.25 (Machado et al., 2018); False: 0.
}
"""Defaults for Atari tasks; keywords given to `make_envpool_env` override them."""

STICKY_ACTION_PROBABILITY = 0.25
_RESERVED = ("env_type", "batch_size")  # Fixed by make_envpool_env: gymnasium API, synchronous.
# envpool options with a rule of their own (those that count something, by their least value); the others must
# have the type of the task's default.
_CHECKS: dict[str, Check] = {
    "max_episode_steps": whole_number(1),
    "frame_skip": whole_number(1),
    "stack_num": whole_number(1),
    "frame_stack": whole_number(1),
    "img_height": whole_number(1),
    "img_width": whole_number(1),
    "num_threads": whole_number(0),
    "noop_max": whole_number(0),
    "repeat_action_probability": (lambda value: is_number(value, at_least=0.0, at_most=1.0), "a probability in [0, 1]"),
}


@functools.cache
def import_envpool() -> Any:
    """envpool, imported on first use: importing it registers every task (seconds)."""
    import envpool

    return envpool


def _task_specs() -> dict[str, tuple[str, str, dict[str, Any]]]:
    return import_envpool().registration.registry.specs


def is_envpool_task(name: str) -> bool:
    """Whether `name` is an envpool task id (`envpool.list_all_envs()`)."""
    return isinstance(name, str) and name in _task_specs()


def is_atari_task(name: str) -> bool:
    """Whether `name` is one of envpool's Atari tasks (these get `ATARI_DEFAULTS`)."""
    return is_envpool_task(name) and _task_specs()[name][0] == "envpool.atari"


def check_task(name: str) -> None:
    """`ValueError`, with the closest ids, unless `name` is an envpool task."""
    if not is_envpool_task(name):
        close = difflib.get_close_matches(str(name), list(_task_specs()), n=5)
        hint = f"did you mean one of {close}? " if close else ""
        raise ValueError(
            f"Unknown envpool task {name!r}; {hint}`envpool.list_all_envs()` lists the valid ids "
            f"(e.g. 'CartPole-v1', 'Pong-v5')."
        )


def pool_options(name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The options of `envpool.make` for task `name` given `make_envpool_env`'s keywords; `ValueError` for bad ones.

    Atari tasks start from `ATARI_DEFAULTS`. `sticky_actions` (Atari) sets
    `repeat_action_probability`; everything else goes to `envpool.make`.
    """
    for key in _RESERVED:
        if key in kwargs:
            raise ValueError(f"{key!r} is fixed by make_envpool_env (gymnasium API, batch_size == num_envs).")
    if "reward_clip" in kwargs:  # envpool would clip before the actors count the score.
        raise ValueError("reward_clip is the learner's: set config.agent.reward_clip (e.g. 1.0) instead")
    atari = is_atari_task(name)
    options = {**ATARI_DEFAULTS, **kwargs} if atari else dict(kwargs)
    sticky_actions = options.pop("sticky_actions", None)
    if sticky_actions is not None:
        if not isinstance(sticky_actions, bool):
            raise ValueError(f"sticky_actions must be True or False, got {sticky_actions!r}.")
        if not atari:
            raise ValueError(f"sticky_actions applies to Atari tasks only, not {name!r}.")
        if "repeat_action_probability" not in kwargs:
            options["repeat_action_probability"] = STICKY_ACTION_PROBABILITY if sticky_actions else 0.0
        elif "sticky_actions" in kwargs:
            raise ValueError("Give sticky_actions or repeat_action_probability, not both.")
    _check_options(name, options)
    return options


def _check_options(name: str, options: dict[str, Any]) -> None:
    """`ValueError` for an option of the wrong type (as the task's default has it) or a count out of range.

    envpool reports a wrong type in a message of many lines, and checks no range; unknown options it names itself.
    """
    defaults = import_envpool().make_spec(name).config._asdict()
    check_settings("envpool", name, options, defaults, checks=_CHECKS, refuse_unknown=False)
