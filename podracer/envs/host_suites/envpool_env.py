"""envpool's C++ pools as Sebulba host environments.

`make_envpool_env("Pong-v5", num_envs=64, seed=0)` builds a synchronous pool
(`batch_size == num_envs`) whose `reset` and `step` return one `TimeStep` of
numpy arrays with a leading batch axis and exactly the semantics of
`podracer.envs.host`: the step that ends an episode is LAST (final
observation, its reward, discount 0 if terminated and 1 if truncated by the
time limit), the next step is FIRST (first observation of the new episode,
reward 0, discount 1, its action ignored).

Actions are discrete ids `[B]` (Atari, CartPole: a `DiscreteArray` spec) or,
for MuJoCo tasks (HalfCheetah-v4, Hopper-v4, Ant-v4, ...), floats
`[B, action_dim]` (a float32 `BoundedArray` spec with the task's bounds,
[-1, 1] for these). The caller clips continuous actions to those bounds before
stepping (see below why it must); `step` checks shapes, dtypes and finiteness.
Observations that envpool gives as float64 (MuJoCo's) are converted to float32,
and their spec says so: JAX computes in float32 anyway, and float64 would only
double the bytes sent to the devices.

`compiled_step` gives the same step as a JAX function, through envpool's XLA
interface (`podracer.envs.host_suites.envpool_xla`); both steps turn envpool's outputs into
timesteps with the one rule below (`_timestep`). Which tasks exist and which
options they take (Atari's defaults, `sticky_actions`) is
`podracer.envs.host_suites.envpool_tasks`'s business.

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

MuJoCo, as checked against envpool 1.2.5 (HalfCheetah-v4, Hopper-v4, Ant-v4):

* Spaces: observations Box float64, unbounded ((17,), (11,), (27,)); actions
  Box float64 in [-1, 1] ((6,), (3,), (8,)). envpool takes float32 actions
  too; we send its own float64.
* Time limit: `max_episode_steps` 1000 agent steps by default. Each agent step
  is `frame_skip` physics steps (5, 4, 5), which are not frames in the Atari
  sense: `frames_per_step` stays 1. At the limit envpool sets `truncated`
  and the next step auto-resets exactly as above (HalfCheetah with
  `max_episode_steps=5`: truncated at elapsed 5, reward 0 and elapsed 0 next).
* Termination: HalfCheetah never terminates; Hopper and Ant do when unhealthy
  (`terminate_when_unhealthy=True`): Hopper pushed with all actions 1 falls
  at step 22 with `terminated`. With `max_episode_steps=22` the same fall
  reads as truncated only, as for CartPole, and the info (positions,
  velocities, reward terms) has no flag to recover it from.
* Out-of-range actions are not clipped by envpool: MuJoCo clamps the control
  in the dynamics (HalfCheetah with all actions 10 reaches the same state as
  with 1) but the control cost uses the raw action (reward -59.0 instead of
  0.4). Hence the caller clips. A NaN action makes MuJoCo warn ("Nan, Inf or
  huge value in CTRL") and return NaN rewards; `step` rejects it.
* envpool checks `action_dim` but accepts a wrong batch size ([3, 6] for 2
  environments) or a flat [12] array; `step` checks the shape.
* Seeding (`seed + i`), environment order and fresh arrays as above; `info`
  adds the reward terms and positions (`x_position`, `x_velocity`, ...).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from podracer.envs import spaces
from podracer.envs.host import CompiledStep, HostEnvironment, check_num_envs
from podracer.envs.host_suites import envpool_tasks, envpool_xla
from podracer.envs.timestep import TimeStep, from_flags


def make_envpool_env(name: str, num_envs: int, seed: int, **kwargs: Any) -> EnvpoolEnvironment:
    """A synchronous pool of `num_envs` copies of envpool task `name`; environment i is seeded `seed + i`.

    Atari tasks start from `envpool_tasks.ATARI_DEFAULTS`. `sticky_actions` (Atari) sets
    `repeat_action_probability`; everything else goes to `envpool.make`
    (`envpool_tasks.pool_options`).
    """
    envpool_tasks.check_task(name)
    num_envs = check_num_envs(num_envs)
    options = envpool_tasks.pool_options(name, kwargs)
    atari = envpool_tasks.is_atari_task(name)
    with warnings.catch_warnings():
        # gymnasium warns that envpool's float64 Box bounds are cast to float32; harmless.
        warnings.filterwarnings("ignore", message=".*precision lowered by casting", category=UserWarning)
        try:
            pool = envpool_tasks.import_envpool().make(
                name, env_type="gymnasium", num_envs=num_envs, batch_size=num_envs, seed=int(seed), **options
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
        try:
            self._observation_spec = spaces.array_spec(pool.observation_space, "observation", float32=True)
            self._action_spec = spaces.action_spec(pool.action_space)
        except ValueError:
            pool.close()
            raise
        self._action_dtype = np.dtype(pool.spec.action_array_spec["action"].dtype)  # int32, or MuJoCo's float64.
        self._env_ids = np.arange(self.num_envs, dtype=np.int32)
        self._pool_done = np.zeros(self.num_envs, bool)  # envpool auto-resets these on the next step.
        self._started = False
        self._closed = False
        self._xla: Any = None  # (handle, step) of `envpool_xla.xla_step`, made on the first `compiled_step`.

    @property
    def pool(self) -> Any:
        """envpool's own pool: stepped directly (`pool.step(actions)`), it gives envpool's own rate, without ours."""
        return self._pool

    def observation_spec(self) -> Any:
        """One environment's observation (no batch axis)."""
        return self._observation_spec

    def action_spec(self) -> spaces.ActionSpec:
        """One environment's action (no batch axis): discrete, or continuous with float32 bounds."""
        return self._action_spec

    def reset(self) -> TimeStep:
        """Starts a new episode in every environment: a FIRST timestep."""
        self._check_open()
        observation, info = self._pool.reset()
        observation = spaces.cast(self._in_env_order(observation, info), self._observation_spec)
        self._pool_done = np.zeros(self.num_envs, bool)
        self._started = True
        zeros = np.zeros(self.num_envs, bool)
        return from_flags(observation, np.zeros(self.num_envs, np.float32), zeros, zeros, ~zeros, xp=np)

    def step(self, action: np.ndarray) -> TimeStep:
        """Steps every environment with `action` (`[B]` ids or `[B, *shape]` floats); LAST ones start anew."""
        self._check_open()
        if not self._started:
            raise RuntimeError("Call reset() before step().")
        action = spaces.check_actions(action, self._action_spec, self.num_envs)
        observation, reward, terminated, truncated, info = self._pool.step(
            action.astype(self._action_dtype, copy=False)
        )
        order = self._order(info)
        if order is not None:
            observation = _take(observation, order)
            reward, terminated, truncated = reward[order], terminated[order], truncated[order]
            info = _take(info, order)
        timestep, self._pool_done = self._timestep(
            observation, reward, terminated, truncated, info, self._pool_done, np
        )
        return timestep

    def compiled_step(self) -> CompiledStep:
        """`step` as a JAX function: envpool's send and receive as XLA custom calls (`envpool_xla`).

        Pools with 64-bit arrays (MuJoCo's observations and actions) cannot be
        stepped this way: JAX, without x64, would declare them 32-bit to
        envpool's custom call.
        """
        self._check_open()
        envpool_xla.check_32_bit(self._pool, self.name)
        if self._xla is None:
            self._xla = envpool_xla.xla_step(self._pool)
        return envpool_xla.compiled_step(self._xla, self._action_dtype, self.num_envs, self._timestep)

    def _timestep(
        self, observation: Any, reward: Any, terminated: Any, truncated: Any, info: dict, pool_done: Any, xp: Any
    ) -> tuple[TimeStep, Any]:
        """The timestep of envpool's outputs (in environment order), and which environments envpool resets next.

        The one rule both `step` (numpy) and `compiled_step` (`jax.numpy`) follow:
        FIRST after envpool's auto-reset, termination also from Atari's game over,
        truncation also from the elapsed steps.
        """
        elapsed = xp.asarray(info["elapsed_step"])
        terminated = xp.asarray(terminated, bool)
        if self._atari:
            terminated = terminated | xp.asarray(info["terminated"], bool)
        truncated = xp.asarray(truncated, bool)
        first = (elapsed == 0) | pool_done
        pool_done = terminated | truncated
        if self.max_episode_steps is not None:
            truncated = truncated | (elapsed >= self.max_episode_steps)
        observation = spaces.cast(observation, self._observation_spec, xp)
        return from_flags(observation, xp.asarray(reward, xp.float32), terminated, truncated, first, xp=xp), pool_done

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
