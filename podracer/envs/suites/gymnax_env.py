"""gymnax's environments (Lange, 2022) for Anakin: `gymnax:CartPole-v1`, `gymnax:Breakout-MinAtar`, ...

Every id in `gymnax.registered_envs` works, those registered at run time with
`gymnax.register` included. The adapter is `gymnax_api`'s, shared with the
other suites of gymnax's API (Craftax, POPGym Arcade): it calls gymnax's
transition, `step_env`, and `reset_env` directly, never gymnax's
auto-resetting `step`, and never resets by itself.

Termination and time limit. Since gymnax 1.0 the flag `step_env` returns is
natural termination only (the pole fell, the game was lost, the goal was
reached, a bandit's single step ended; never the time limit), and the time
limit is gymnax's `is_truncated`, `state.time >= params.max_steps_in_episode`
on the stepped state; gymnax's `step` derives its `terminated` and `truncated`
the same way. `timestep.from_flags` then gives discount 0 on termination and 1
on truncation, termination winning when both happen on one step.
(DeepSea-bsuite's running bsuite metrics in its state, which its `step` keeps
across resets, restart with every episode here.)

Keyword arguments name fields of gymnax's env params (`max_steps_in_episode`,
`gravity`, ...) or arguments of the gymnax environment's constructor
(`rows` of Catch-bsuite, `use_minimal_action_set` of MinAtar, ...).
"""

import functools
import inspect
from typing import Any

import gymnax

from podracer.envs.spaces import space_to_spec
from podracer.envs.suites.gymnax_api import GymnaxApiEnvironment, GymnaxApiState, Settings

__all__ = ["GymnaxEnvironment", "GymnaxState", "is_task", "make", "space_to_spec", "task_names"]

GymnaxState = GymnaxApiState


class GymnaxEnvironment(GymnaxApiEnvironment):
    """The gymnax environment `task` with dm_env semantics; build it with `make`."""

    suite = "gymnax"
    time_limit_fields = ("max_steps_in_episode",)

    @classmethod
    def build(cls, task: str, constructor_kwargs: Settings) -> Any:
        return _gymnax_env(task, constructor_kwargs)

    @classmethod
    def constructor_arguments(cls, task: str) -> dict[str, Any]:
        """The named arguments of the factory gymnax registered for `task` (its environment class)."""
        parameters = inspect.signature(gymnax.registration._registry[task]).parameters.values()
        return {p.name: p.default for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}

    def episode_end(self, before: Any, after: Any, done: Any, info: Any) -> tuple[Any, Any]:
        """gymnax 1.x's `done` is termination alone; the time limit is its `is_truncated` on the stepped state."""
        return done, self.suite_env.is_truncated(after, self.params)

    @property
    def gymnax_env(self) -> Any:
        """gymnax's environment object (shared by equal adapters)."""
        return self.suite_env


def is_task(task: str) -> bool:
    return task in gymnax.registered_envs


def task_names() -> list[str]:
    return list(gymnax.registered_envs)


def make(task: str, **kwargs: Any) -> GymnaxEnvironment:
    """The adapter of gymnax's `task`; `kwargs` set env params fields or constructor arguments.

    Raises `ValueError` naming the accepted names for any other keyword.
    """
    return GymnaxEnvironment.make(task, **kwargs)


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
