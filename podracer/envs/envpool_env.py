"""envpool's C++ pools as Sebulba host environments.

`make_envpool_env("Pong-v5", num_envs=64, seed=0)` builds a synchronous pool
(`batch_size == num_envs`) whose `reset` and `step` return one `TimeStep` of
numpy arrays with a leading batch axis and exactly the semantics of
`podracer.envs.host`: the step that ends an episode is LAST (final
observation, its reward, discount 0 if terminated and 1 if truncated by the
time limit), the next step is FIRST (first observation of the new episode,
reward 0, discount 1, its action ignored).

Atari tasks get the standard preprocessing (`ATARI_DEFAULTS`); any keyword
that is not our `sticky_actions` option goes to `envpool.make` unchanged
(`num_threads`, for instance: envpool's worker threads, 0 lets it choose).
Rewards are the game's own; clipping them is the learner's business
(`config.agent.reward_clip`), so episode returns always report the real score.

envpool's behaviour, as checked against envpool 1.2.5 (gymnasium API, CartPole-v1,
Pong-v5 and Breakout-v5) before writing this module:

* Auto-reset: after a step whose `terminated` or `truncated` is set, the next
  `step` ignores its action and returns the first observation of a new
  episode with reward 0, both flags False and `info["elapsed_step"] == 0`.
  This holds after a time limit too (CartPole and Pong with
  `max_episode_steps=5` / `6`: truncated at elapsed 5 / 6, elapsed 0 next).
* `elapsed_step` counts agent steps: 0 on `reset` and on the auto-reset step,
  k after k steps; the limit fires when it reaches `max_episode_steps` (for
  Atari agent steps, so the default 27000 is 108000 frames).
* At the time limit envpool sets `truncated` (we did not see both flags False;
  we still OR in `elapsed_step >= max_episode_steps` as a safeguard). Its
  gymnasium API computes `terminated = done & ~truncated`, so an episode whose
  terminal state falls exactly on its last allowed step is reported as
  truncated (CartPole pushed right with `max_episode_steps=9`: the pole falls
  at step 9 and the flags say truncated only). For Atari, `info["terminated"]`
  (game over) is still 1 there (Breakout, game over at the limit), so we take
  termination from it and termination wins, as in `timestep.transition`. For
  other tasks it cannot be recovered: such a step gets discount 1 (rare; it
  needs the terminal state on exactly the last allowed step). envpool's dm API
  does not help: its discount is 0 on truncation as well.
* `info` holds `env_id`, `players.env_id` and `elapsed_step`; Atari adds
  `lives`, `reward` (unclipped), `terminated` (int32 game over) and `ram`
  (uint8 [128]).
* With `episodic_life=True` (Atari; off by default) a life loss sets
  `terminated` and the next step is an auto-reset that keeps the game going and
  does not zero `elapsed_step`, so we also mark FIRST on every step after one
  envpool flagged done. Episodes and statistics are then per life.
* Seeding: environment i of a pool is seeded `seed + i` (env 1 of a seed-0
  pool equals env 0 of a seed-1 pool), so pools meant to differ need seeds at
  least `num_envs` apart. Same seed and actions give identical observations.
* A synchronous pool returns environments in `env_id` order (checked every
  step); we reorder defensively if it ever does not.
* Returned arrays are fresh each step: later steps do not overwrite them.
* envpool does not validate actions (a wrong batch size or out-of-range ids
  are silently accepted), so `step` does.
"""

from __future__ import annotations

import difflib
import functools
import warnings
from typing import Any

import numpy as np
from dm_env import specs

from podracer.envs.host import HostEnvironment
from podracer.envs.timestep import TimeStep, from_flags

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
_RESERVED = ("env_type", "batch_size")  # Fixed by this module: gymnasium API, synchronous.


@functools.cache
def _envpool() -> Any:
    """envpool, imported on first use: importing it registers every task (seconds)."""
    import envpool

    return envpool


def _task_specs() -> dict[str, tuple[str, str, dict[str, Any]]]:
    return _envpool().registration.registry.specs


def is_envpool_task(name: str) -> bool:
    """Whether `name` is an envpool task id (`envpool.list_all_envs()`)."""
    return isinstance(name, str) and name in _task_specs()


def is_atari_task(name: str) -> bool:
    """Whether `name` is one of envpool's Atari tasks (these get `ATARI_DEFAULTS`)."""
    return is_envpool_task(name) and _task_specs()[name][0] == "envpool.atari"


def make_envpool_env(name: str, num_envs: int, seed: int, **kwargs: Any) -> EnvpoolEnvironment:
    """A synchronous pool of `num_envs` copies of envpool task `name`; environment i is seeded `seed + i`.

    Atari tasks start from `ATARI_DEFAULTS`. `sticky_actions` (Atari) sets
    `repeat_action_probability`; everything else goes to `envpool.make`.
    """
    if not is_envpool_task(name):
        close = difflib.get_close_matches(str(name), list(_task_specs()), n=5)
        hint = f"did you mean one of {close}? " if close else ""
        raise ValueError(
            f"Unknown envpool task {name!r}; {hint}`envpool.list_all_envs()` lists the valid ids "
            f"(e.g. 'CartPole-v1', 'Pong-v5')."
        )
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}.")
    for key in _RESERVED:
        if key in kwargs:
            raise ValueError(f"{key!r} is fixed by make_envpool_env (gymnasium API, batch_size == num_envs).")
    if "reward_clip" in kwargs:  # envpool would clip before the actors count the score.
        raise ValueError("reward_clip is the learner's: set config.agent.reward_clip (e.g. 1.0) instead")
    atari = is_atari_task(name)
    options = {**ATARI_DEFAULTS, **kwargs} if atari else dict(kwargs)
    sticky_actions = options.pop("sticky_actions", None)
    if sticky_actions is not None:
        if not atari:
            raise ValueError(f"sticky_actions applies to Atari tasks only, not {name!r}.")
        if "repeat_action_probability" not in kwargs:
            options["repeat_action_probability"] = STICKY_ACTION_PROBABILITY if sticky_actions else 0.0
        elif "sticky_actions" in kwargs:
            raise ValueError("Give sticky_actions or repeat_action_probability, not both.")
    with warnings.catch_warnings():
        # gymnasium warns that envpool's float64 Box bounds are cast to float32; harmless.
        warnings.filterwarnings("ignore", message=".*precision lowered by casting", category=UserWarning)
        try:
            pool = _envpool().make(
                name, env_type="gymnasium", num_envs=int(num_envs), batch_size=int(num_envs), seed=int(seed), **options
            )
        except (TypeError, ValueError, AssertionError, RuntimeError) as error:
            message = str(error) or repr(error)
            raise ValueError(f"envpool rejected {name!r} with options {options}: {message}") from error
        frames_per_step = int(pool.spec.config.frame_skip) if atari else 1
        return EnvpoolEnvironment(pool, name, frames_per_step=frames_per_step, atari=atari)


class EnvpoolEnvironment(HostEnvironment):
    """A synchronous envpool pool of `num_envs` environments as a `HostEnvironment`; arrays are numpy, `[B, ...]`."""

    def __init__(self, pool: Any, name: str = "", frames_per_step: int = 1, atari: bool = False):
        """Wraps a synchronous envpool gymnasium pool; use `make_envpool_env` to build one."""
        config = pool.spec.config
        self._pool = pool
        self.name: str = name
        self.num_envs: int = int(config.num_envs)
        self.frames_per_step: int = int(frames_per_step)
        limit = int(getattr(config, "max_episode_steps", 0) or 0)
        self.max_episode_steps: int | None = limit if limit > 0 else None
        self._atari = atari  # info["terminated"] says game over even at the time limit.
        self._observation_spec = _array_spec(pool.observation_space, "observation")
        space = pool.action_space
        if type(space).__name__ != "Discrete" or int(getattr(space, "start", 0)) != 0:
            pool.close()
            raise ValueError(f"Only tasks with discrete actions 0..n-1 are supported; this one has {space}.")
        self._action_spec = specs.DiscreteArray(int(space.n), dtype=np.int32, name="action")
        self._env_ids = np.arange(self.num_envs, dtype=np.int32)
        self._pool_done = np.zeros(self.num_envs, bool)  # envpool auto-resets these on the next step.
        self._started = False
        self._closed = False

    def observation_spec(self) -> specs.BoundedArray:
        """One environment's observation (no batch axis)."""
        return self._observation_spec

    def action_spec(self) -> specs.DiscreteArray:
        """One environment's action (no batch axis)."""
        return self._action_spec

    def reset(self) -> TimeStep:
        """Starts a new episode in every environment: a FIRST timestep."""
        self._check_open()
        observation, info = self._pool.reset()
        observation = self._in_env_order(observation, info)
        self._pool_done = np.zeros(self.num_envs, bool)
        self._started = True
        zeros = np.zeros(self.num_envs, bool)
        return from_flags(observation, np.zeros(self.num_envs, np.float32), zeros, zeros, ~zeros, xp=np)

    def step(self, action: np.ndarray) -> TimeStep:
        """Steps every environment with `action` `[B]`; environments whose last timestep was LAST start anew."""
        self._check_open()
        if not self._started:
            raise RuntimeError("Call reset() before step().")
        action = np.asarray(action)
        if action.shape != (self.num_envs,) or not np.issubdtype(action.dtype, np.integer):
            raise ValueError(
                f"Expected integer actions of shape ({self.num_envs},), got {action.dtype} {action.shape}."
            )
        if action.min() < 0 or action.max() >= self._action_spec.num_values:
            raise ValueError(f"Actions must lie in [0, {self._action_spec.num_values}); got {action}.")
        observation, reward, terminated, truncated, info = self._pool.step(action.astype(np.int32, copy=False))
        order = self._order(info)
        if order is not None:
            observation = _take(observation, order)
            reward, terminated, truncated = reward[order], terminated[order], truncated[order]
            info = _take(info, order)
        elapsed = np.asarray(info["elapsed_step"])
        terminated = np.asarray(terminated, bool)
        if self._atari:
            terminated = terminated | np.asarray(info["terminated"], bool)
        truncated = np.asarray(truncated, bool)
        first = (elapsed == 0) | self._pool_done
        self._pool_done = terminated | truncated
        if self.max_episode_steps is not None:
            truncated = truncated | (elapsed >= self.max_episode_steps)
        return from_flags(observation, np.asarray(reward, np.float32), terminated, truncated, first, xp=np)

    def close(self) -> None:
        """Stops envpool's threads; further calls do nothing."""
        if not self._closed:
            self._closed = True
            self._pool.close()

    def __repr__(self) -> str:
        return f"EnvpoolEnvironment({self.name!r}, num_envs={self.num_envs}, frames_per_step={self.frames_per_step})"

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("This EnvpoolEnvironment is closed.")

    def _order(self, info: dict[str, Any]) -> np.ndarray | None:
        """The permutation to environment order, or None when envpool kept it (always, in our checks)."""
        env_id = info["env_id"]
        return None if (env_id == self._env_ids).all() else np.argsort(env_id)

    def _in_env_order(self, observation: Any, info: dict[str, Any]) -> Any:
        order = self._order(info)
        return observation if order is None else _take(observation, order)


def _take(tree: Any, order: np.ndarray) -> Any:
    """Reorders the leading axis of every array in a (nested dict) tree."""
    if isinstance(tree, dict):
        return {key: _take(value, order) for key, value in tree.items()}
    return np.asarray(tree)[order]


def _array_spec(space: Any, name: str) -> Any:
    """A dm_env spec for one environment's part of a gymnasium Box (or Dict of Boxes) space."""
    if type(space).__name__ == "Dict":
        return {key: _array_spec(sub, key) for key, sub in space.spaces.items()}
    low, high = np.asarray(space.low), np.asarray(space.high)
    minimum = low.flat[0] if low.size and (low == low.flat[0]).all() else low
    maximum = high.flat[0] if high.size and (high == high.flat[0]).all() else high
    return specs.BoundedArray(tuple(space.shape), np.dtype(space.dtype), minimum, maximum, name=name)
