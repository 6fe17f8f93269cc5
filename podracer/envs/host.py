"""The host-environment interface Sebulba's actors step: a batch of environments on the CPU, numpy in and out.

Anything that steps a batch of environments outside JAX can feed Sebulba by
implementing these few methods: envpool's C++ pools (`envpool_env`), a
Gymnasium vector environment, or a user's own simulator. `reset` and `step`
return one `TimeStep` of numpy arrays with a leading batch axis `[B, ...]` and
the same dm_env semantics as the pure-JAX environments wrapped for training:
the step that ends an episode is LAST (its final observation, its reward,
discount 0 if terminated and 1 if truncated), the next step is FIRST (the new
episode's first observation, reward 0, discount 1; its action is ignored).
`timestep.from_flags(..., xp=numpy)` builds such a timestep from Gymnasium-style
flags. Episode statistics are not the environment's job: the actors compute
them from the timesteps (`podracer.envs.episodes`).

A batch that can also be stepped from inside a compiled JAX program (envpool's
pools, through its XLA interface) says so with `compiled_step`: the actor then
runs a whole rollout, acting and stepping, as one program on its actor device,
with no Python between the steps (`podracer.sebulba.unroll`).

Sebulba creates one batch per actor thread, on the main thread, through a
factory `make(num_envs, seed) -> HostEnvironment`; environment i of a batch
should be seeded `seed + i`, so batches made with seeds `num_envs` apart differ.
"""

import abc
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple, Self

import numpy as np

from podracer.envs.timestep import TimeStep


class CompiledStep(NamedTuple):
    """A batch's `step` as a JAX function, to be called inside a compiled program (`jax.jit`, `lax.scan`).

    `step(state, action) -> (state, timestep)` has exactly the semantics of
    `HostEnvironment.step`, on JAX arrays. `state` is what the step threads from
    call to call (envpool: its handle, which orders the calls, and which
    environments auto-reset next); `initial_state` is the state right after
    `reset()`. Environments stepped this way must not be stepped by `step` too.
    """

    initial_state: Any
    step: Callable[[Any, Any], tuple[Any, TimeStep]]


class HostEnvironment(abc.ABC):
    """A batch of `num_envs` environments stepped on the host, with dm_env semantics."""

    num_envs: int
    frames_per_step: int = 1  # Emulator frames per agent step (frame skip), for frames-per-second figures.

    @abc.abstractmethod
    def reset(self) -> TimeStep:
        """Starts a new episode in every environment: a FIRST timestep, numpy `[B, ...]`."""

    @abc.abstractmethod
    def step(self, action: Any) -> TimeStep:
        """Steps every environment with its action `[B, ...]`; those whose last timestep was LAST start anew."""

    @abc.abstractmethod
    def observation_spec(self) -> Any:
        """One environment's observation spec (no batch axis): a `dm_env.specs.Array` or a nest of them."""

    @abc.abstractmethod
    def action_spec(self) -> Any:
        """One environment's action spec (no batch axis)."""

    def compiled_step(self) -> CompiledStep:
        """This batch's step as a JAX function; `NotImplementedError`, saying why, where it can only step from Python."""
        raise NotImplementedError(f"{type(self).__name__} steps from Python only")

    def close(self) -> None:  # noqa: B027 -- optional: not every batch holds threads or processes.
        """Releases threads or processes; further calls do nothing."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


HostEnvFactory = Callable[[int, int], HostEnvironment]  # (num_envs, seed) -> a batch.


def check_num_envs(num_envs: Any) -> int:
    """`num_envs` as an int; `ValueError` unless it is a positive integer (a bool is not)."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}.")
    return int(num_envs)


def import_if_present(module: str) -> ModuleType | None:
    """The module a host environment's name gives (Gymnasium's `module:Id`, a PettingZoo module path), imported;
    None where no such module exists. A module that exists but imports something missing raises: its user must
    see that, not an unknown name."""
    if not all(part.isidentifier() for part in module.split(".")):
        return None
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is None or not (module == error.name or module.startswith(error.name + ".")):
            raise
        return None
