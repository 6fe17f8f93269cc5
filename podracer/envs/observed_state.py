"""An environment whose observations carry its own state, for a search that steps the environment as its model.

Sampled AlphaZero (`podracer.agents.continuous_search.sampled_alphazero`)
plans with the environment's own `step`, from where the agent acts; an agent
sees only its observation. `ObservesState` puts the wrapped environment's
state in the observation dict under `ENV_STATE` (`podracer.envs.actions`),
which no torso reads, beside the environment's own observation: under
`OBSERVATION`, or as its own entries where it already observes a dict (an
action mask stays where the agent looks for it). `env.kwargs.observe_state=True`
asks `podracer.envs.make` for it around any pure-JAX environment, as Pgx's
`self_play` puts a game's state in its observation for AlphaZero.

PRNG keys in the state (the gymnax adapter's, split on every step) are
observed as their raw key data, so that the observed state is a pytree of
plain arrays: mctx keeps every node's embedding in arrays it allocates with
`jnp.zeros`, which a key type refuses. `model_step` wraps them back (JAX's
default key implementation, the one podracer draws every key with) and steps.
A search so sees the environment's random draws as the state holds them:
each simulated step draws what the real one would from that state.
`own_observation` takes the state out again, for what a dataset records.
"""

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import chex
import jax
from dm_env import specs

from podracer.envs import timestep as ts
from podracer.envs.actions import ENV_STATE, GAME_STATE, OBSERVATION, without_entry
from podracer.envs.base import Environment, EnvState
from podracer.envs.wrappers import Wrapper


def _is_key(x: Any) -> bool:
    return jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def as_arrays(state: EnvState) -> Any:
    """`state` with every PRNG key leaf as its raw key data (uint32): what the observation carries."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, state)


@dataclasses.dataclass(frozen=True)
class ObservesState(Wrapper):
    """`env` whose observation holds its state under `ENV_STATE` (module docstring)."""

    def reset(self, key: chex.PRNGKey) -> tuple[EnvState, ts.TimeStep]:
        return self._observed(*self.env.reset(key))

    def step(self, state: EnvState, action: chex.Array) -> tuple[EnvState, ts.TimeStep]:
        return self._observed(*self.env.step(state, action))

    def reset_episode(self, state: EnvState, key: chex.PRNGKey) -> tuple[EnvState, ts.TimeStep]:
        return self._observed(*self.env.reset_episode(state, key))

    def model_step(self, observed_state: Any, action: chex.Array) -> tuple[Any, ts.TimeStep]:
        """One environment's step from the state an observation carries: `(the next state as observed, timestep)`;
        the timestep's observation carries the next state too."""
        state = jax.tree.map(
            lambda shape, x: jax.random.wrap_key_data(x) if _is_key(shape) else x, self._state_shapes, observed_state
        )
        state, timestep = self.step(state, action)
        return timestep.observation[ENV_STATE], timestep

    def observation_spec(self) -> dict[str, Any]:
        """The environment's spec (its entries, or `OBSERVATION`'s) and `ENV_STATE`'s: a spec at every leaf."""
        state_spec = jax.tree.map(lambda x: specs.Array(x.shape, x.dtype, name=ENV_STATE), self._observed_shapes)
        return {**self._entries(self.env.observation_spec()), ENV_STATE: state_spec}

    def unobserved(self, observation: dict[str, Any]) -> Any:
        """The wrapped environment's own observation (of any batch shape) of one that carries the state."""
        own = without_entry(observation, ENV_STATE)
        return own if isinstance(self.env.observation_spec(), dict) else own[OBSERVATION]

    @functools.cached_property
    def _state_shapes(self) -> Any:
        return jax.eval_shape(self.env.reset, jax.random.key(0))[0]

    @functools.cached_property
    def _observed_shapes(self) -> Any:
        return jax.eval_shape(as_arrays, self._state_shapes)

    def _observed(self, state: EnvState, timestep: ts.TimeStep) -> tuple[EnvState, ts.TimeStep]:
        observation = {**self._entries(timestep.observation), ENV_STATE: as_arrays(state)}
        return state, timestep.replace(observation=observation)

    @staticmethod
    def _entries(observation: Any) -> dict[str, Any]:
        return dict(observation) if isinstance(observation, dict) else {OBSERVATION: observation}


def own_observation(env: Environment) -> tuple[Callable[[Any], Any], Any]:
    """`(observation -> the environment's own observation, its spec)`: what a dataset keeps of `env`'s observations,
    without a state that only a search reads (an `ObservesState`'s, or a Pgx game's `GAME_STATE` with `self_play`),
    so that it is the observation of the environment without the option; the identity for any other."""
    if isinstance(env, ObservesState):
        return env.unobserved, env.env.observation_spec()
    spec = env.observation_spec()
    if not isinstance(spec, dict) or GAME_STATE not in spec:
        return (lambda observation: observation), spec
    return functools.partial(without_entry, name=GAME_STATE), without_entry(spec, GAME_STATE)
