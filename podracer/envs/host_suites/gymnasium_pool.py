"""The worker processes behind `gymnasium_env`: starting them, telling what went wrong with them, and ending them.

`GymnasiumEnvironment` (`podracer.envs.host_suites.gymnasium_env`) steps its environments
in a `gymnasium.vector.AsyncVectorEnv`, one worker process each; this module
is how those processes are started and stopped, and how their failures read.
The code that runs inside them is `gymnasium_worker`.

Workers start with `context` "forkserver" (the default where it exists, POSIX)
or "spawn", never "fork": JAX runs threads, and a forked copy of a process with
threads can deadlock. Both start a fresh interpreter (forkserver forks it
from a small server, which is quicker), so, as with any such worker:

* workers do not import the main script again (`_main_script_hidden`), so
  they import only Gymnasium and the environment's own module
  (`gymnasium_worker`): a CartPole worker starts in about 0.15 CPU seconds
  and holds about 40 MB, where re-running a script that imports podracer (the
  `podracer` command does) would cost 0.85 s and 180 MB each. A module run
  with `python -m` is imported by name; there, guard top-level code with
  `if __name__ == "__main__":`;
* an id registered only in this process (in a test module, a notebook) works:
  workers get its `EnvSpec`, whose entry point is pickled with it. An entry
  point that is a class or function goes by reference if its module can be
  imported (a test module can) and by value (cloudpickle) if it is defined in
  `__main__` (a notebook cell) or inside a function; an entry point given as
  a string naming `__main__` cannot be found in a worker.

Workers ignore SIGINT: Ctrl-C in a terminal reaches every process of the
group, and it is for the main process to stop (Sebulba stops cleanly) and to
close the workers. A worker that fails never leaves the caller waiting: an
exception in the environment comes back as a `RuntimeError` naming the
environment and the original error with its traceback (`diagnose`); a worker
process that dies (killed, `os._exit`) closes its pipe, which ends the wait at
once; a worker that hangs is given up after the caller's timeout. After any of
these every worker is terminated (`terminate`).
"""

import contextlib
import functools
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

import gymnasium
from gymnasium.vector import AsyncVectorEnv, AutoresetMode

from podracer.envs.host_suites import gymnasium_worker

START_METHODS = ("forkserver", "spawn")


def start(
    task: str,
    spec: gymnasium.envs.registration.EnvSpec,
    make_kwargs: dict[str, Any],
    num_envs: int,
    autoreset_mode: AutoresetMode,
    context: str | None,
) -> AsyncVectorEnv:
    """`num_envs` workers, each making `spec` with `gymnasium.make(spec, **make_kwargs)`, as one vector environment.

    `context` is the start method, "forkserver" or "spawn" (default:
    forkserver where available). The first environment is made here, in this
    process, for the spaces, so most errors show up now: a `ValueError` for
    what Gymnasium or the environment refuses, a `RuntimeError` where the
    workers die while starting.
    """
    start_method = _start_method(context)
    same_step = autoreset_mode is AutoresetMode.SAME_STEP
    make_env = functools.partial(gymnasium_worker.make_env, spec, make_kwargs, same_step, os.getpid())
    try:
        with _main_script_hidden():
            return AsyncVectorEnv([make_env] * num_envs, context=start_method, autoreset_mode=autoreset_mode)
    except (TypeError, ValueError, AssertionError, gymnasium.error.Error) as error:  # Gymnasium asserts some.
        raise ValueError(f"Gymnasium could not make {task!r} with {make_kwargs}: {error}") from error
    except (EOFError, OSError) as error:
        raise RuntimeError(
            f"The worker processes of Gymnasium environment {task!r} died while starting; their traceback is "
            "above. Workers start afresh: they import the main script again (guard a script's code with "
            "`if __name__ == '__main__':`) and must find the entry point (a string naming __main__ cannot)."
        ) from error


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


def diagnose(vec: AsyncVectorEnv, where: str, call: str, error: Exception, timeout: float) -> str:
    """What went wrong in `call`, and in which environments (environment i runs in worker i), for a message.

    `where` names the environment; `timeout` is how long `call` waited, in seconds.
    """
    pipes, processes, num_envs = vec.parent_pipes, vec.processes, vec.num_envs
    raised = [i for i, pipe in enumerate(pipes) if pipe is None]  # Gymnasium drops the pipes of those that raised.
    if raised:
        return f"{where}: environment {_listed(raised)} of {num_envs} raised in {call}: {error}"
    if isinstance(error, multiprocessing.TimeoutError):
        silent = [i for i, pipe in enumerate(pipes) if not pipe.poll()]
        return (
            f"{where}: environment {_listed(silent)} of {num_envs} gave no answer to {call} within "
            f"{timeout:g} s (step_timeout_seconds): hung, or slower than the timeout allows."
        )
    multiprocessing.connection.wait([p.sentinel for p in processes], timeout=1.0)  # Let a dying worker exit.
    dead = [f"{i} ({_exit_reason(p.exitcode)})" for i, p in enumerate(processes) if p.exitcode is not None]
    if dead:
        return f"{where}: the worker process of environment {', '.join(dead)} of {num_envs} died in {call}."
    return f"{where}: {call} failed: {type(error).__name__}: {error}"


def close(vec: AsyncVectorEnv) -> None:
    """Closes every environment of `vec` and ends its workers; terminates them if one died since the last call."""
    try:
        vec.close()  # Each worker closes its environment and exits.
    except (EOFError, OSError):  # A worker died since the last step.
        terminate(vec)


def terminate(vec: AsyncVectorEnv) -> None:
    """Ends every worker of `vec` without waiting for its answer, and releases the pipes.

    `vec.close` would first wait for the pending call, which fails again (or
    hangs) for a dead or hung worker, so this does its job from the outside.
    """
    for process in vec.processes:
        if process.is_alive():
            process.terminate()
    for process in vec.processes:
        process.join(timeout=5.0)
        if process.is_alive():  # Ignored SIGTERM.
            process.kill()
            process.join()
    for pipe in vec.parent_pipes:
        if pipe is not None:
            pipe.close()
    vec.closed = True


def _listed(indices: list[int]) -> str:
    return ", ".join(map(str, indices))


def _exit_reason(exitcode: int) -> str:
    return f"killed by {signal.Signals(-exitcode).name}" if exitcode < 0 else f"exit code {exitcode}"
