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
  without touching the environment (`worker_env.SkipStepAfterAutoreset`):
  the vector environment steps every sub-environment every time, and buffering
  it here would let the ignored action move the new episode on unseen.
  Both modes give the same timesteps (tested); next_step has no wrapper.
* "disabled" is refused: finished environments would then wait for a masked
  `reset`, an extra round trip to every worker, and the step after it would
  still feed the FIRST step's action to the new episode.

The worker processes are `worker_pool`'s, which PettingZoo's environments
share: how they start (never by "fork"), why they do not import the main
script again, and how a worker that raises, dies or hangs is reported and ended.
"""

import difflib
import functools
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from podracer.envs import spaces
from podracer.envs.host import HostEnvironment, check_num_envs, import_if_present
from podracer.envs.host_suites import worker_pool
from podracer.envs.timestep import TimeStep, from_flags

AUTORESET_MODES = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}


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
        step_timeout_seconds: float = worker_pool.DEFAULT_STEP_TIMEOUT_SECONDS,
        vectorization_mode: str = "async",
        **make_kwargs: Any,
    ):
        """Starts `num_envs` workers, each making `task` with `gymnasium.make(..., **make_kwargs)`.

        `autoreset_mode` is "next_step" or "same_step" (module docstring);
        `context` the start method, "forkserver" or "spawn" (default: forkserver
        where available); `step_timeout_seconds` how long `reset` and `step`
        wait for a worker before raising; `vectorization_mode` "sync" steps the
        environments in the calling thread instead of workers (`worker_pool`).
        """
        spec = _find_spec(task)
        if spec is None:
            close = difflib.get_close_matches(str(task), task_names(), n=5)
            hint = f"did you mean one of {close}? " if close else ""
            raise ValueError(f"Unknown Gymnasium id {task!r}; {hint}`gymnasium.pprint_registry()` lists them.")
        self.name: str = task
        self.num_envs: int = check_num_envs(num_envs)
        pool = worker_pool.WorkerPool(
            f"Gymnasium environment {task!r}",
            functools.partial(gymnasium.make, spec),
            make_kwargs,
            self.num_envs,
            seed,
            autoreset_mode=_autoreset_mode(autoreset_mode),
            context=context,
            step_timeout_seconds=step_timeout_seconds,
            vectorization_mode=vectorization_mode,
        )
        self.autoreset_mode = pool.autoreset_mode
        try:
            self._observation_spec = spaces.array_spec(pool.vec.single_observation_space, "observation")
            self._action_spec = spaces.action_spec(pool.vec.single_action_space)
        except ValueError:
            pool.close()
            raise
        self._action_dtype = np.dtype(pool.vec.single_action_space.dtype)
        self._pool = pool
        self._done = np.zeros(self.num_envs, bool)  # These ended an episode on the last step: next is FIRST.

    def observation_spec(self) -> Any:
        """One environment's observation (no batch axis): a `BoundedArray`, or a dict of them."""
        return self._observation_spec

    def action_spec(self) -> spaces.ActionSpec:
        """One environment's action (no batch axis): discrete, or continuous with float32 bounds."""
        return self._action_spec

    def reset(self) -> TimeStep:
        """Starts a new episode in every environment: a FIRST timestep."""
        observation, _ = self._pool.reset()
        self._done = np.zeros(self.num_envs, bool)
        return from_flags(observation, 0.0, False, False, np.ones(self.num_envs, bool), xp=np)

    def step(self, action: Any) -> TimeStep:
        """Steps every environment with `action` (`[B]` ids or `[B, *shape]` floats); LAST ones start anew."""
        action = spaces.check_actions(action, self._action_spec, self.num_envs).astype(self._action_dtype, copy=False)
        observation, reward, terminated, truncated, info = self._pool.step(action)
        first, self._done = self._done, terminated | truncated
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            for index in np.flatnonzero(self._done):  # The observation returned is the next episode's first.
                _put(observation, index, info["final_obs"][index])
        return from_flags(observation, reward, terminated, truncated, first, xp=np)

    def close(self) -> None:
        """Closes every environment and ends the worker processes; further calls do nothing."""
        self._pool.close()

    def __repr__(self) -> str:
        mode = self.autoreset_mode.name.lower()
        return f"GymnasiumEnvironment({self.name!r}, num_envs={self.num_envs}, autoreset_mode={mode!r})"


def _find_spec(task: Any) -> gymnasium.envs.registration.EnvSpec | None:
    """The registered spec of `task` (`EnvId`, or `module:EnvId` after importing `module`), None if there is none."""
    if not isinstance(task, str) or not task:
        return None
    module, separator, env_id = task.partition(":")
    if separator:
        if import_if_present(module) is None:
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


def _put(batch: Any, index: int, value: Any) -> None:
    """Writes one environment's observation (an array or nested dict) into row `index` of a batch."""
    if isinstance(batch, dict):
        for key in batch:
            _put(batch[key], index, value[key])
    else:
        batch[index] = value
