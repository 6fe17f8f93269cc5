"""What runs inside the worker processes `worker_pool` starts: the environment factory and its two wrappers.

`make_env` is what `gymnasium.vector.AsyncVectorEnv` calls in each worker,
whatever the suite: it calls the suite's own factory (`gymnasium.make`, or
`pettingzoo_worker.make`) and wraps what it makes. This module is sent to the
workers by value (`cloudpickle.register_pickle_by_value` below), so a worker
imports Gymnasium and numpy but never podracer, which would also import JAX,
flax and optax: a second or two and about a hundred MB for every worker. Keep
it free of podracer imports.
"""

import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

import cloudpickle
import gymnasium


def make_env(
    make: Callable[..., gymnasium.Env], kwargs: dict[str, Any], same_step: bool, main_pid: int
) -> gymnasium.Env:
    """`make(**kwargs)`, skipping the step after a SAME_STEP reset, and in a worker reporting errors picklably.

    `make` travels pickled, with what it holds: a Gymnasium `EnvSpec`, say,
    whose entry point comes with it, so that ids registered only in the main
    process (in a test module, a notebook) work here. In a worker (any process
    but `main_pid`, where the vector environment makes one copy to read the
    spaces, or all of them in "sync" mode) SIGINT is ignored: Ctrl-C in a
    terminal reaches every process of the group, and the main process, which
    Sebulba stops cleanly on it, closes the workers itself.
    """
    in_worker = os.getpid() != main_pid
    if in_worker:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    env = make(**kwargs)
    env = SkipStepAfterAutoreset(env) if same_step else env
    return ReportErrors(env) if in_worker else env


class ReportErrors(gymnasium.Wrapper):
    """Re-raises anything `reset` or `step` raise as a `RuntimeError` holding its type, message and traceback.

    The vector environment sends a worker's exception to the parent through a
    queue; one that cannot be pickled (holding a lock, say) is dropped on the
    way and the parent waits for it forever, whatever its timeout. A message
    always pickles, and carries the traceback to the parent's error.
    """

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        try:
            return self.env.reset(**kwargs)
        except Exception as error:
            raise _report(error) from None

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        try:
            return self.env.step(action)
        except Exception as error:
            raise _report(error) from None


class SkipStepAfterAutoreset(gymnasium.Wrapper):
    """Under SAME_STEP autoreset, makes the step after an episode's end return the new episode's start.

    With `AutoresetMode.SAME_STEP` the vector environment resets a
    sub-environment within the step that ends its episode, then steps it with
    the next action like any other. podracer's semantics ignore that action:
    the next timestep is FIRST, the new episode's first observation. So after
    such a reset the next `step` does not touch the environment and returns
    that observation again, with reward 0 and neither flag.

    The vector environment's reset follows the ending step at once; a `reset`
    after that (an explicit one) finds no ending to follow and cancels the skip.
    """

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self._ended = False  # The last step ended an episode.
        self._first: Any = None  # The observation an autoreset started with, until the next step returns it.

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        self._first = observation if self._ended else None
        self._ended = False
        return observation, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        if self._first is not None:
            observation, self._first = self._first, None
            return observation, 0.0, False, False, {}
        observation, reward, terminated, truncated, info = self.env.step(action)
        self._ended = bool(terminated or truncated)
        return observation, reward, terminated, truncated, info


def _report(error: Exception) -> RuntimeError:
    trace = "".join(traceback.format_exception(error)).rstrip()
    return RuntimeError(f"{type(error).__name__}: {error}\nTraceback in the worker:\n{trace}")


cloudpickle.register_pickle_by_value(sys.modules[__name__])
