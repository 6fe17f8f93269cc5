"""Jumanji's environments (Bonnet et al., 2024) for Anakin: `jumanji:Snake-v1`, `jumanji:Game2048-v1`, ...

Every id in `jumanji.registered_environments()`, through stoa's
`JumanjiToStoa` and `podracer.envs.suites.stoa_env` (which says why stoa's
adapter keeps podracer's semantics). Jumanji never resets by itself, and ends
an episode with discount 0. At a task's time limit too (Snake's `time_limit`,
4000 steps; Maze's, PacMan's, Tetris's, ...), which stoa keeps; so
`JumanjiEnvironment` runs Jumanji with one step more and ends the episode at
the time limit itself, with discount 1 (truncation).

Observations are Jumanji's structured ones as dicts of their fields: Snake
observes `{"action_mask": bool[4], "grid": float32[12, 12, 5], "step_count":
int32[]}`. The `action_mask` field is podracer's action mask
(`podracer.envs.actions`), so the categorical head never picks an illegal move.

Keyword arguments are the task's constructor arguments (`num_rows`,
`time_limit` of Snake; `board_size` of Game2048). Tasks with one reward per
agent (Connector, LevelBasedForaging, SearchAndRescue) are refused: podracer's
agents learn from one scalar reward. Tasks with several discrete actions at once
(`MultiDiscreteArray`: BinPack, Tetris, ...) have an integer `BoundedArray`
action spec, which podracer's agents refuse by name.
"""

import dataclasses
import inspect
from typing import Any

import chex
import jumanji

from podracer.config.errors import ConfigError
from podracer.envs import timestep as ts
from podracer.envs.suites.adapting import check_settings
from podracer.envs.suites.stoa_env import StoaEnvironment
from podracer.envs.suites.stoa_modules import stoa_module

JumanjiToStoa = stoa_module("env_adapters.jumanji").JumanjiToStoa

_COUNTS = ("time_limit", "num_rows", "num_cols", "board_size")  # Settings that must be whole numbers >= 1.


def is_task(task: str) -> bool:
    return task in jumanji.registered_environments()


def task_names() -> list[str]:
    return sorted(jumanji.registered_environments())


@dataclasses.dataclass(frozen=True)
class JumanjiEnvironment(StoaEnvironment):
    """A Jumanji task whose time limit, if it has one, truncates (discount 1) rather than terminates.

    Jumanji ends an episode at its time limit with a termination (discount 0),
    like any other end. So the Jumanji environment inside is built with one
    step more than `time_limit`, and this adapter ends the episode at
    `time_limit` itself: LAST with discount 1, unless Jumanji terminated on that
    very step (termination wins).
    """

    time_limit: int | None = None

    def step(self, state: Any, action: chex.Array) -> tuple[Any, ts.TimeStep]:
        state, timestep = super().step(state, action)
        if self.time_limit is None:
            return state, timestep
        last, at_limit = timestep.last(), state.step_count >= self.time_limit
        return state, ts.transition(
            timestep.observation, timestep.reward, last & (timestep.discount == 0), last | at_limit
        )


def make(task: str, **kwargs: Any) -> JumanjiEnvironment:
    """The adapter of Jumanji's `task`; `kwargs` are arguments of its constructor.

    Builds it now: raises `ValueError` naming the accepted names for any other
    keyword, and `ConfigError` on `env.name` for a task with one reward per agent.
    """
    settings = check_settings("jumanji", task, kwargs, _constructor_defaults(task), _COUNTS)
    time_limit = getattr(jumanji.make(task, **dict(settings)), "time_limit", None)
    if time_limit is not None:  # One more step inside, so that Jumanji's own time limit never ends an episode.
        settings = tuple(sorted({**dict(settings), "time_limit": time_limit + 1}.items()))
    env = JumanjiEnvironment(_build, task, settings, time_limit)
    env.stoa_env  # noqa: B018 (builds it)
    return env


def _build(task: str, **kwargs: Any) -> JumanjiToStoa:
    env = jumanji.make(task, **kwargs)
    if env.reward_spec.shape != () or env.discount_spec.shape != ():
        raise ConfigError(
            "env.name",
            f"jumanji {task} has one reward per agent (shape {env.reward_spec.shape}); podracer's agents "
            "learn from one scalar reward",
            "choose a single-agent task such as jumanji:Snake-v1 or jumanji:Game2048-v1",
        )
    return JumanjiToStoa(env)


def _constructor_defaults(task: str) -> dict[str, Any]:
    """The named arguments of `task`'s environment class, with the defaults its registration gives them."""
    spec = jumanji.registration._REGISTRY[task]
    parameters = inspect.signature(jumanji.registration.load(spec.entry_point)).parameters.values()
    defaults = {p.name: p.default for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return defaults | spec.kwargs
