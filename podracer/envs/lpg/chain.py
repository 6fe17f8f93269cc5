"""LPG's delayed chain MDPs (Oh et al. 2020, Appendix A.3, Table 2): credit for a first choice paid at the end.

Two actions. The first action chooses one of two chains of `length` states;
every later action only moves one state along it. Reaching the chain's end,
`length` steps after the start, terminates the episode with reward +1 if the
first action was the lifetime's rewarded one and -1 otherwise. In the noisy
variants every step before the end pays a distractor reward, -1 or +1 with
equal probability, independent of the actions. The agent observes its state
one-hot over `1 + 2 * max_length` states: the start, then each chain's states.

A lifetime's layout is the chain's `length`, uniform in the variant's range,
and which first action is rewarded (the paper draws the length per lifetime;
drawing the rewarded action with it, rather than fixing it, is ours, so that
the rule cannot learn the answer instead of the credit assignment).

| variant | length | distractor rewards |
| --- | --- | --- |
| `short` | 5 to 30 | no |
| `short_noisy` | 5 to 30 | yes |
| `long` | 5 to 50 | no |
| `long_noisy` | 5 to 50 | yes |
"""

import dataclasses
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
from dm_env import specs
from flax import struct

from podracer.envs import timestep as ts
from podracer.envs.lpg import lifetimes


class ChainVariant(NamedTuple):
    min_length: int
    max_length: int
    noisy: bool


VARIANTS = {
    "short": ChainVariant(5, 30, False),
    "short_noisy": ChainVariant(5, 30, True),
    "long": ChainVariant(5, 50, False),
    "long_noisy": ChainVariant(5, 50, True),
}


@struct.dataclass
class ChainLayout:
    length: jnp.ndarray  # int32: steps from the start to the end.
    rewarded_action: jnp.ndarray  # int32: the first action that the end pays +1 for.


@struct.dataclass
class ChainState:
    layout: ChainLayout  # The lifetime's: kept by `reset_episode`.
    chain: jnp.ndarray  # int32: the first action taken (0 before it).
    position: jnp.ndarray  # int32: steps taken in this episode.
    key: chex.PRNGKey  # For the distractor rewards.


@dataclasses.dataclass(frozen=True)
class DelayedChain(lifetimes.LifetimeEnvironment):
    """`lpg_delayed_chain`: `variant` is one of `VARIANTS`; see the module's docstring."""

    variant: str = "short"
    held_out_layouts: int = 0  # 0: training layouts; n: one of the first n held-out layouts.

    def __post_init__(self):
        lifetimes.check_options(self.variant, VARIANTS, self.held_out_layouts)

    @property
    def spec(self) -> ChainVariant:
        return VARIANTS[self.variant]

    def sample_layout(self, key: chex.PRNGKey) -> ChainLayout:
        length_key, action_key = jax.random.split(key)
        length = jax.random.randint(length_key, (), self.spec.min_length, self.spec.max_length + 1)
        return ChainLayout(length, jax.random.randint(action_key, (), 0, 2))

    def start_episode(self, layout: ChainLayout, key: chex.PRNGKey) -> tuple[ChainState, ts.TimeStep]:
        state = ChainState(layout, jnp.int32(0), jnp.int32(0), key)
        return state, ts.restart(self._observe(state))

    def step(self, state: ChainState, action: chex.Array) -> tuple[ChainState, ts.TimeStep]:
        key, noise_key = jax.random.split(state.key)
        chain = jnp.where(state.position == 0, jnp.asarray(action, jnp.int32), state.chain)
        state = ChainState(state.layout, chain, state.position + 1, key)
        at_end = state.position >= state.layout.length
        distractor = jnp.where(jax.random.bernoulli(noise_key), 1.0, -1.0) if self.spec.noisy else 0.0
        reward = jnp.where(at_end, jnp.where(chain == state.layout.rewarded_action, 1.0, -1.0), distractor)
        return state, ts.transition(self._observe(state), reward, terminated=at_end, truncated=False)

    def _observe(self, state: ChainState) -> jnp.ndarray:
        index = jnp.where(state.position == 0, 0, 1 + state.chain * self.spec.max_length + state.position - 1)
        return jax.nn.one_hot(index, 1 + 2 * self.spec.max_length, dtype=jnp.float32)

    def observation_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((1 + 2 * self.spec.max_length,), jnp.float32, 0.0, 1.0, name="state")

    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(2, name="action")
