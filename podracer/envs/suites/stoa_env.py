"""Environments adapted by stoa (Stoix's adapters, package `stoa-env`) as podracer environments.

Jumanji, XLand-MiniGrid and Navix reach podracer through stoa's adapters
(`JumanjiToStoa`, `XMiniGridToStoa`, `NavixToStoa`), which keep podracer's
semantics (checked in tests/envs/suites against each suite's own `step`):

- no auto-reset inside `step`: the timestep that ends an episode carries its
  real last observation (Jumanji and XLand-MiniGrid never reset by themselves;
  Navix resets on the step *after* a LAST timestep, which podracer's
  `AutoReset` never takes);
- discount 0 on termination and 1 on truncation, as each suite gives them
  (Jumanji itself calls its time limits terminations: `jumanji_env` corrects
  that). stoa's step type does not always say which: Jumanji's and
  XLand-MiniGrid's single LAST step type becomes stoa's TERMINATED on
  truncation too. The discount does, so a LAST timestep is a termination
  exactly where its discount is 0, and `timestep.transition` makes podracer's
  timestep from that.

`StoaEnvironment` converts the rest to podracer's conventions: observations
become nests of arrays (Jumanji's NamedTuple and dataclass observations become
dicts of their fields, so an `action_mask` field lands under
`podracer.envs.actions.ACTION_MASK`), stoa's spaces become dm_env specs with
the shapes and dtypes the environment really returns, and states get strong
dtypes so that they are a stable `lax.scan` carry. stoa casts Navix's and
XLand-MiniGrid's uint8 grids to float32 (losslessly); the specs say float32.

stoa's environment objects are not hashable, and podracer's environments must
be; so `StoaEnvironment` holds a builder (a module-level function) with the
task and its settings, and builds the stoa environment once per distinct
value.
"""

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import chex
import jax

from podracer.envs import timestep as ts
from podracer.envs.base import Environment
from podracer.envs.spaces import space_to_spec
from podracer.envs.suites.adapting import Settings, strongly_typed
from podracer.envs.suites.stoa_modules import stoa_module

StoaEnv = stoa_module("environment").Environment


@dataclasses.dataclass(frozen=True)
class StoaEnvironment(Environment):
    """`build(task, **settings)`'s stoa environment with dm_env semantics; the suites' `make` build these."""

    build: Callable[..., StoaEnv]  # A module-level function, so equal adapters share one stoa environment.
    task: str
    settings: Settings = ()

    @property
    def stoa_env(self) -> StoaEnv:
        """The stoa environment (built once, shared by equal adapters)."""
        return _stoa_env(self.build, self.task, self.settings)

    def reset(self, key: chex.PRNGKey) -> tuple[Any, ts.TimeStep]:
        state, timestep = self.stoa_env.reset(key)
        return strongly_typed(state), ts.restart(as_nest(timestep.observation))

    def step(self, state: Any, action: chex.Array) -> tuple[Any, ts.TimeStep]:
        state, timestep = self.stoa_env.step(state, action)
        last = timestep.last()
        terminated = last & (timestep.discount == 0)
        return strongly_typed(state), ts.transition(as_nest(timestep.observation), timestep.reward, terminated, last)

    @functools.cached_property
    def _observation_shapes(self) -> Any:
        return jax.eval_shape(lambda key: self.reset(key)[1].observation, jax.random.key(0))

    def observation_spec(self) -> Any:
        """stoa's observation space, with the shapes and dtypes of the observations the environment returns."""
        with jax.ensure_compile_time_eval():  # Concrete bounds, even when asked inside a jitted function.
            return space_to_spec(self.stoa_env.observation_space(), "observation", like=self._observation_shapes)

    def action_spec(self) -> Any:
        with jax.ensure_compile_time_eval():
            return space_to_spec(self.stoa_env.action_space(), "action")


def as_nest(observation: Any) -> Any:
    """An observation as podracer's nest: NamedTuples and dataclasses become dicts of their fields, recursively."""
    if isinstance(observation, dict):
        return {key: as_nest(value) for key, value in observation.items()}
    if isinstance(observation, tuple) and hasattr(observation, "_asdict"):
        return as_nest(observation._asdict())
    if dataclasses.is_dataclass(observation) and not isinstance(observation, type):
        return {field.name: as_nest(getattr(observation, field.name)) for field in dataclasses.fields(observation)}
    return observation


@functools.lru_cache(maxsize=64)
def _stoa_env(build: Callable[..., StoaEnv], task: str, settings: Settings) -> StoaEnv:
    """The stoa environment of `task`, built once per builder, task and settings.

    Built outside any trace, so the constants it keeps (bounds, layouts) are
    concrete even where the first use is inside a jitted function.
    """
    with jax.ensure_compile_time_eval():
        return build(task, **dict(settings))
