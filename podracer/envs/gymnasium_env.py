"""Any Gymnasium environment as a Sebulba host environment, its copies stepped in worker processes.

`make("CartPole-v1", num_envs=8, seed=0)` (in a config, `env.name =
"gymnasium:CartPole-v1"`) runs the environments in a
`gymnasium.vector.AsyncVectorEnv`, one worker process each, for CPU
parallelism without envpool; environment i is seeded `seed + i` on the first
`reset` (later resets continue each one's random stream, as envpool's do).
Any registered id works, your own included; `module:EnvId` imports `module`
first, as `gymnasium.make` does. Keywords other than ours (below) go to
`gymnasium.make`: `max_episode_steps`, `render_mode`, the environment's own.

Timesteps have exactly the semantics of `podracer.envs.host`, as envpool's:
terminated and truncated come from the environment (a `TimeLimit` wrapper
truncates), the step that ends an episode is LAST with its final observation,
the next one FIRST with the new episode's first observation, reward 0,
discount 1, its action ignored. Observation specs keep the space's dtype and
bounds; actions are `Discrete(n)` ids or floats of a Box (see `spaces`).

Autoreset (`autoreset_mode`, Gymnasium's `metadata["autoreset_mode"]`):

* "next_step" (Gymnasium's default): the step after an ending resets the
  environment and ignores its action; the vector environment returns the
  first observation with reward 0: our FIRST as it is.
* "same_step": the vector environment resets within the ending step, returns
  the new first observation there and the final one in `info["final_obs"]`.
  We put the final observation in the LAST timestep; the new first
  observation is kept in the worker, and the next step returns it as FIRST
  without touching the environment (`gymnasium_worker.SkipStepAfterAutoreset`):
  the vector environment steps every sub-environment every time, and buffering
  it here would let the ignored action move the new episode on unseen.
  Both modes give the same timesteps (tested); next_step has no wrapper.
* "disabled" is refused: finished environments would then wait for a masked
  `reset`, an extra round trip to every worker, and the step after it would
  still feed the FIRST step's action to the new episode.

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
environment and the original error with its traceback; a worker process that
dies (killed, `os._exit`) closes its pipe, which ends the wait at once; a
worker that hangs is given up after `step_timeout_seconds`. After any of
these every worker is terminated and the environment is closed.
"""

import contextlib
import difflib
import functools
import importlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode

from podracer.envs import gymnasium_worker, spaces
from podracer.envs.host import HostEnvironment, check_num_envs
from podracer.envs.timestep import TimeStep, from_flags

DEFAULT_STEP_TIMEOUT_SECONDS = 60.0
"""How long `reset` and `step` wait for a worker before calling it hung: far beyond any sane step."""

AUTORESET_MODES = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}
START_METHODS = ("forkserver", "spawn")


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


def is_task(task: str) -> bool:
    """Whether `task` is a registered Gymnasium id, or `module:EnvId` with `module` importable and registering it."""
    return _find_spec(task) is not None


def task_names() -> list[str]:
    """Gymnasium's registered ids (for hints)."""
    return sorted(gymnasium.registry)


def make(task: str, num_envs: int, seed: int, **kwargs: Any) -> "GymnasiumEnvironment":
    """`num_envs` copies of Gymnasium environment `task` in worker processes; see `GymnasiumEnvironment`."""
    return GymnasiumEnvironment(task, num_envs, seed, **kwargs)


class GymnasiumEnvironment(HostEnvironment):
    """A batch of Gymnasium environments in an `AsyncVectorEnv` as a `HostEnvironment`; numpy arrays `[B, ...]`."""

    def __init__(
        self,
        task: str,
        num_envs: int,
        seed: int,
        *,
        autoreset_mode: str | AutoresetMode = "next_step",
        context: str | None = None,
        step_timeout_seconds: float = DEFAULT_STEP_TIMEOUT_SECONDS,
        **make_kwargs: Any,
    ):
        """Starts `num_envs` workers, each making `task` with `gymnasium.make(..., **make_kwargs)`.

        `autoreset_mode` is "next_step" or "same_step" (module docstring);
        `context` the start method, "forkserver" or "spawn" (default: forkserver
        where available); `step_timeout_seconds` how long `reset` and `step`
        wait for a worker before raising.
        """
        spec = _find_spec(task)
        if spec is None:
            close = difflib.get_close_matches(str(task), task_names(), n=5)
            hint = f"did you mean one of {close}? " if close else ""
            raise ValueError(f"Unknown Gymnasium id {task!r}; {hint}`gymnasium.pprint_registry()` lists them.")
        self.name: str = task
        self.num_envs: int = check_num_envs(num_envs)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"seed must be an integer, got {seed!r}.")
        timeout = step_timeout_seconds
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
            raise ValueError(f"step_timeout_seconds must be a positive number, got {step_timeout_seconds!r}.")
        self._seed, self._timeout = int(seed), float(step_timeout_seconds)
        mode, start_method = _autoreset_mode(autoreset_mode), _start_method(context)
        same_step = mode is AutoresetMode.SAME_STEP
        make_env = functools.partial(gymnasium_worker.make_env, spec, make_kwargs, same_step, os.getpid())
        try:  # The first environment is made here, in this process, for the spaces: most errors show up now.
            with _main_script_hidden():
                vec = AsyncVectorEnv([make_env] * self.num_envs, context=start_method, autoreset_mode=mode)
        except (TypeError, ValueError, AssertionError, gymnasium.error.Error) as error:  # Gymnasium asserts some.
            raise ValueError(f"Gymnasium could not make {task!r} with {make_kwargs}: {error}") from error
        except (EOFError, OSError) as error:
            raise RuntimeError(
                f"The worker processes of Gymnasium environment {task!r} died while starting; their traceback is "
                "above. Workers start afresh: they import the main script again (guard a script's code with "
                "`if __name__ == '__main__':`) and must find the entry point (a string naming __main__ cannot)."
            ) from error
        self.autoreset_mode = AutoresetMode(vec.metadata["autoreset_mode"])  # What the workers do.
        try:
            self._observation_spec = spaces.array_spec(vec.single_observation_space, "observation")
            self._action_spec = spaces.action_spec(vec.single_action_space)
        except ValueError:
            vec.close()
            raise
        self._action_dtype = np.dtype(vec.single_action_space.dtype)
        self._vec = vec
        self._done = np.zeros(self.num_envs, bool)  # These ended an episode on the last step: next is FIRST.
        self._started = False
        self._closed = False
        self._failure: str | None = None

    def observation_spec(self) -> Any:
        """One environment's observation (no batch axis): a `BoundedArray`, or a dict of them."""
        return self._observation_spec

    def action_spec(self) -> spaces.ActionSpec:
        """One environment's action (no batch axis): discrete, or continuous with float32 bounds."""
        return self._action_spec

    def reset(self) -> TimeStep:
        """Starts a new episode in every environment: a FIRST timestep."""
        self._check_usable()
        seed = None if self._started else self._seed
        observation, _ = self._exchange("reset", lambda: self._vec.reset_async(seed=seed), self._vec.reset_wait)
        self._started = True
        self._done = np.zeros(self.num_envs, bool)
        return from_flags(observation, 0.0, False, False, np.ones(self.num_envs, bool), xp=np)

    def step(self, action: Any) -> TimeStep:
        """Steps every environment with `action` (`[B]` ids or `[B, *shape]` floats); LAST ones start anew."""
        self._check_usable()
        if not self._started:
            raise RuntimeError("Call reset() before step().")
        action = spaces.check_actions(action, self._action_spec, self.num_envs).astype(self._action_dtype, copy=False)
        observation, reward, terminated, truncated, info = self._exchange(
            "step", lambda: self._vec.step_async(action), self._vec.step_wait
        )
        first, self._done = self._done, terminated | truncated
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            for index in np.flatnonzero(self._done):  # The observation returned is the next episode's first.
                _put(observation, index, info["final_obs"][index])
        return from_flags(observation, reward, terminated, truncated, first, xp=np)

    def close(self) -> None:
        """Closes every environment and ends the worker processes; further calls do nothing."""
        if self._closed:  # Closed before, or terminated after a failure.
            return
        self._closed = True
        try:
            self._vec.close()  # Each worker closes its environment and exits.
        except (EOFError, OSError):  # A worker died since the last step.
            _terminate(self._vec)

    def __repr__(self) -> str:
        mode = self.autoreset_mode.name.lower()
        return f"GymnasiumEnvironment({self.name!r}, num_envs={self.num_envs}, autoreset_mode={mode!r})"

    def _check_usable(self) -> None:
        if self._failure is not None:
            raise RuntimeError(f"This GymnasiumEnvironment failed and was closed: {self._failure}")
        if self._closed:
            raise RuntimeError("This GymnasiumEnvironment is closed.")

    def _exchange(self, call: str, send: Callable[[], None], receive: Callable[..., Any]) -> Any:
        """`send()` to the workers and `receive(timeout=...)` their answer; on any failure, terminate and raise."""
        try:
            send()
            return receive(timeout=self._timeout)
        except Exception as error:
            self._failure = self._diagnose(call, error)
            self._closed = True
            _terminate(self._vec)
            raise RuntimeError(self._failure) from error

    def _diagnose(self, call: str, error: Exception) -> str:
        """What went wrong in `call`, and in which environments (environment i runs in worker i), for a message."""
        where = f"Gymnasium environment {self.name!r}"
        pipes, processes = self._vec.parent_pipes, self._vec.processes
        raised = [i for i, pipe in enumerate(pipes) if pipe is None]  # Gymnasium drops the pipes of those that raised.
        if raised:
            return f"{where}: environment {_listed(raised)} of {self.num_envs} raised in {call}: {error}"
        if isinstance(error, multiprocessing.TimeoutError):
            silent = [i for i, pipe in enumerate(pipes) if not pipe.poll()]
            return (
                f"{where}: environment {_listed(silent)} of {self.num_envs} gave no answer to {call} within "
                f"{self._timeout:g} s (step_timeout_seconds): hung, or slower than the timeout allows."
            )
        multiprocessing.connection.wait([p.sentinel for p in processes], timeout=1.0)  # Let a dying worker exit.
        dead = [f"{i} ({_exit_reason(p.exitcode)})" for i, p in enumerate(processes) if p.exitcode is not None]
        if dead:
            return f"{where}: the worker process of environment {', '.join(dead)} of {self.num_envs} died in {call}."
        return f"{where}: {call} failed: {type(error).__name__}: {error}"


def _find_spec(task: Any) -> gymnasium.envs.registration.EnvSpec | None:
    """The registered spec of `task` (`EnvId`, or `module:EnvId` after importing `module`), None if there is none."""
    if not isinstance(task, str) or not task:
        return None
    module, separator, env_id = task.partition(":")
    if separator:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name is None or not (module == error.name or module.startswith(error.name + ".")):
                raise  # The module exists but imports something missing: the user must see that.
            return None
    else:
        env_id = task
    return gymnasium.registry.get(env_id)


def _autoreset_mode(mode: str | AutoresetMode) -> AutoresetMode:
    name = mode.name.lower() if isinstance(mode, AutoresetMode) else mode
    if name not in AUTORESET_MODES:
        raise ValueError(
            f"autoreset_mode must be one of {sorted(AUTORESET_MODES)}, got {mode!r} ('disabled' cannot give "
            "podracer's FIRST steps: the vector environment would step the new episode with their action)."
        )
    return AUTORESET_MODES[name]


def _start_method(context: str | None) -> str:
    if context is None:
        return next(m for m in START_METHODS if m in multiprocessing.get_all_start_methods())
    if context not in START_METHODS:
        raise ValueError(
            f"context must be one of {START_METHODS}, got {context!r}: JAX runs threads, and forking a process "
            "with threads can deadlock the child."
        )
    return context


def _put(batch: Any, index: int, value: Any) -> None:
    """Writes one environment's observation (an array or nested dict) into row `index` of a batch."""
    if isinstance(batch, dict):
        for key in batch:
            _put(batch[key], index, value[key])
    else:
        batch[index] = value


def _terminate(vec: AsyncVectorEnv) -> None:
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
