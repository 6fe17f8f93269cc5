"""A batch of Python environments stepped in worker processes, one each (or in this thread): starting, stepping, ending.

The host suites written in Python step their environments here: Gymnasium's
(`gymnasium_env`) and PettingZoo's (`pettingzoo_env`, each parallel environment
seen by its worker as one Gymnasium environment, `pettingzoo_worker`). A
`WorkerPool` runs a `gymnasium.vector.AsyncVectorEnv`, one worker process per
environment, so the environments' Python steps run beside the actor threads
instead of holding their GIL; this module is how those processes are started,
stepped and stopped, and how their failures read. The code that runs inside
them is `worker_env`. With `vectorization_mode` "sync" (Gymnasium's name for
it) the same environments, wrapped the same way, step one after another in
the calling thread instead, in a `gymnasium.vector.SyncVectorEnv`: on a
machine with few cores, where worker processes cost more in messages and
context switches than they give back, that is faster (`docs/benchmarks.md`).
Both modes give the same timesteps (tested).

Workers start with `context` "forkserver" (the default where it exists, POSIX)
or "spawn", never "fork": JAX runs threads, and a forked copy of a process with
threads can deadlock. Both start a fresh interpreter (forkserver forks it
from a small server, which is quicker), so, as with any such worker:

* workers do not import the main script again (`_main_script_hidden`), so
  they import only the suite and the environment's own module (the worker
  side is sent by value): a CartPole worker starts in about 0.15 CPU seconds
  and holds about 40 MB, where re-running a script that imports podracer (the
  `podracer` command does) would cost 0.85 s and 180 MB each. A module run
  with `python -m` is imported by name; there, guard top-level code with
  `if __name__ == "__main__":`;
* what the workers make their environment with travels pickled: a Gymnasium
  id registered only in this process (in a test module, a notebook) works, as
  its `EnvSpec`, whose entry point is pickled with it. An entry point that is
  a class or function goes by reference if its module can be imported (a test
  module can) and by value (cloudpickle) if it is defined in `__main__` (a
  notebook cell) or inside a function; an entry point given as a string
  naming `__main__` cannot be found in a worker.

Workers ignore SIGINT: Ctrl-C in a terminal reaches every process of the
group, and it is for the main process to stop (Sebulba stops cleanly) and to
close the workers. A worker that fails never leaves the caller waiting: an
exception in the environment comes back as a `RuntimeError` naming the
environment and the original error with its traceback (`worker_failures`); a worker
process that dies (killed, `os._exit`) closes its pipe, which ends the wait at
once; a worker that hangs is given up after `step_timeout_seconds`. After any
of these every worker is terminated (`worker_failures.terminate`), and the pool refuses
further calls. In "sync" mode an environment's exception is raised in the
calling thread the same way; nothing can time a hung step out there (Sebulba's
`stall_timeout_seconds` ends such a run, naming the actor thread).
"""

import contextlib
import functools
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from podracer.envs.host_suites import worker_env, worker_failures

START_METHODS = ("forkserver", "spawn")
VECTORIZATION_MODES = ("async", "sync")  # Worker processes, or the calling thread.

DEFAULT_STEP_TIMEOUT_SECONDS = 60.0
"""How long `reset` and `step` wait for a worker before calling it hung: far beyond any sane step."""


class WorkerPool:
    """`num_envs` environments, each made by `make_env(**kwargs)` in its own worker process, reset and stepped together.

    Environment i is seeded `seed + i` on the first `reset`; later resets
    continue each one's random stream. `reset` and `step` return what
    Gymnasium's vector environments return, batched `[B, ...]`; any failure
    ends every environment and raises a `RuntimeError` that starts with `where`
    (which names the environment: "Gymnasium environment 'CartPole-v1'").
    `vectorization_mode` "sync" steps them in the calling thread instead.
    """

    def __init__(
        self,
        where: str,
        make_env: Callable[..., gymnasium.Env],
        kwargs: dict[str, Any],
        num_envs: int,
        seed: int,
        *,
        autoreset_mode: AutoresetMode,
        context: str | None,
        step_timeout_seconds: float,
        vectorization_mode: str = "async",
    ):
        """Checks the seed and timeout, then starts the workers (see `_start`), or makes the environments here."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed must be an integer, got {seed!r}.")
        timeout = step_timeout_seconds
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
            raise ValueError(f"step_timeout_seconds must be a positive number, got {step_timeout_seconds!r}.")
        if vectorization_mode not in VECTORIZATION_MODES:
            raise ValueError(
                f"vectorization_mode must be one of {VECTORIZATION_MODES}, got {vectorization_mode!r}: 'async' steps "
                "each environment in its own worker process, 'sync' all of them in the actor thread."
            )
        self.where = where
        self._seed, self._timeout = int(seed), float(timeout)
        if vectorization_mode == "async":
            self.vec = _start(where, make_env, kwargs, num_envs, autoreset_mode, context)
        else:
            self.vec = _make_here(where, make_env, kwargs, num_envs, autoreset_mode)
        self.autoreset_mode = AutoresetMode(self.vec.metadata["autoreset_mode"])  # What the environments do.
        self._started = False
        self._closed = False
        self._failure: str | None = None

    def reset(self) -> tuple[Any, dict[str, Any]]:
        """Resets every environment, seeded the first time: `(observations, infos)`."""
        self._check_usable()
        seed = None if self._started else self._seed
        result = self._call("reset", seed=seed)
        self._started = True
        return result

    def step(self, action: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every environment with its row of `action`: `(observations, rewards, terminated, truncated, infos)`."""
        self._check_usable()
        if not self._started:
            raise RuntimeError("Call reset() before step().")
        return self._call("step", action)

    def close(self) -> None:
        """Closes every environment and ends the worker processes; further calls do nothing."""
        if self._closed:  # Closed before, or terminated after a failure.
            return
        self._closed = True
        if isinstance(self.vec, AsyncVectorEnv):
            worker_failures.close(self.vec)
        else:
            self.vec.close()

    def _check_usable(self) -> None:
        if self._failure is not None:
            raise RuntimeError(f"This environment failed and was closed: {self._failure}")
        if self._closed:
            raise RuntimeError(f"{self.where} is closed.")

    def _call(self, call: str, *args: Any, **kwargs: Any) -> Any:
        """`reset` or `step` of the vector environment: sent to the workers, whose answer is awaited for at most the
        timeout, or called here; on any failure, ends every environment and raises."""
        vec = self.vec
        try:
            if isinstance(vec, AsyncVectorEnv):
                getattr(vec, f"{call}_async")(*args, **kwargs)
                return getattr(vec, f"{call}_wait")(timeout=self._timeout)
            return getattr(vec, call)(*args, **kwargs)
        except Exception as error:
            self._closed = True
            if isinstance(vec, AsyncVectorEnv):
                self._failure = worker_failures.diagnose(vec, self.where, call, error, self._timeout)
                worker_failures.terminate(vec)
            else:
                self._failure = f"{self.where}: an environment raised in {call}: {type(error).__name__}: {error}"
                with contextlib.suppress(Exception):  # Its own failure is the one to report.
                    vec.close()
            raise RuntimeError(self._failure) from error


def _start(
    where: str,
    make_env: Callable[..., gymnasium.Env],
    kwargs: dict[str, Any],
    num_envs: int,
    autoreset_mode: AutoresetMode,
    context: str | None,
) -> AsyncVectorEnv:
    """`num_envs` workers, each making its environment with `make_env(**kwargs)`, as one vector environment.

    `context` is the start method, "forkserver" or "spawn" (default:
    forkserver where available). The first environment is made here, in this
    process, for the spaces, so most errors show up now: a `ValueError` for
    what Gymnasium or the environment refuses, a `RuntimeError` where the
    workers die while starting.
    """
    start_method = _start_method(context)
    factory = _factory(make_env, kwargs, autoreset_mode)
    try:
        with _main_script_hidden(), _refusals_as_value_errors(where, kwargs):
            return AsyncVectorEnv([factory] * num_envs, context=start_method, autoreset_mode=autoreset_mode)
    except (EOFError, OSError) as error:
        raise RuntimeError(
            f"The worker processes of {where} died while starting; their traceback is above. Workers start "
            "afresh: they import the main script again (guard a script's code with `if __name__ == '__main__':`) "
            "and must find what makes the environment (an entry point given as a string naming __main__ cannot)."
        ) from error


def _make_here(
    where: str,
    make_env: Callable[..., gymnasium.Env],
    kwargs: dict[str, Any],
    num_envs: int,
    autoreset_mode: AutoresetMode,
) -> SyncVectorEnv:
    """`num_envs` environments made with `make_env(**kwargs)` in this process, as one vector environment."""
    with _refusals_as_value_errors(where, kwargs):
        return SyncVectorEnv([_factory(make_env, kwargs, autoreset_mode)] * num_envs, autoreset_mode=autoreset_mode)


def _factory(make_env: Callable[..., gymnasium.Env], kwargs: dict[str, Any], autoreset_mode: AutoresetMode) -> Any:
    """What makes one environment, wrapped (`worker_env.make_env`), in a worker or here."""
    same_step = autoreset_mode is AutoresetMode.SAME_STEP
    return functools.partial(worker_env.make_env, make_env, kwargs, same_step, os.getpid())


@contextlib.contextmanager
def _refusals_as_value_errors(where: str, kwargs: dict[str, Any]) -> Iterator[None]:
    """Within, what Gymnasium or the environment refuses while being made is a `ValueError` naming both."""
    try:
        yield
    except (TypeError, ValueError, AssertionError, gymnasium.error.Error) as error:  # Gymnasium asserts some.
        raise ValueError(f"{where} could not be made with {kwargs}: {error}") from error


@contextlib.contextmanager
def _main_script_hidden() -> Iterator[None]:
    """Workers started within do not import the main script again.

    multiprocessing's "spawn" and "forkserver" children re-run the parent's
    main script (as `__mp_main__`) so that what it defines can be unpickled.
    Our workers need nothing from it: their code and the environment's entry
    point travel by value (cloudpickle) or by importable module. Under the
    `podracer` command, or any script importing podracer, re-running it costs
    each worker JAX's import (0.85 CPU seconds and 180 MB instead of 0.15 s and
    40 MB), so the script's path is withheld while the workers start.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is None or getattr(main, "__spec__", None) is not None:  # A notebook, or `python -m`: nothing to hide.
        yield
        return
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path


def _start_method(context: str | None) -> str:
    if context is None:
        return next(m for m in START_METHODS if m in multiprocessing.get_all_start_methods())
    if context not in START_METHODS:
        raise ValueError(
            f"context must be one of {START_METHODS}, got {context!r}: JAX runs threads, and forking a process "
            "with threads can deadlock the child."
        )
    return context
