"""Lifetimes: an LPG environment's layout is drawn when an agent's lifetime starts and kept by its episodes.

Oh et al. 2020 ("Discovering Reinforcement Learning Algorithms", Appendix A)
meta-train on environments whose configuration (where a tabular grid world's
objects are, how long a delayed chain is) is fixed for an agent's lifetime and
drawn afresh for the next. Here the layout lives in the environment's state:

- `reset(key)` starts a lifetime: it draws a layout from the key and starts an
  episode on it;
- `reset_episode(state, key)`, what auto-reset calls after a LAST timestep,
  starts the next episode on the same layout;
- `draw_layout(key)` and `start_lifetime(layout, key)` let a meta-trainer draw
  and start lifetimes itself.

Held-out layouts, for evaluating a learned rule on layouts it never trained
on: a layout whose fingerprint (a hash of its integer arrays) is 0 modulo
`HELD_OUT_MODULUS` is held out. `draw_layout` redraws until it is not,
`held_out_layout(index)` until it is, so the two sets are disjoint by
construction. With `held_out_layouts=n`, `reset` draws among the first n
held-out layouts instead.
"""

import abc
from typing import Any

import chex
import jax
import jax.numpy as jnp

from podracer.config.field_checks import is_whole_number
from podracer.envs.base import Environment
from podracer.envs.timestep import TimeStep

Layout = Any  # A pytree of integer or boolean arrays.

HELD_OUT_MODULUS = 8  # About one layout in 8 is held out.
_HELD_OUT_SEED = 20200717  # The key held-out layouts are drawn from (the paper's arXiv date).
_MAX_DRAWS = 256  # Each draw misses with probability <= 7/8: 256 misses are never seen.


def fingerprint(layout: Layout) -> jnp.ndarray:
    """A uint32 hash of a layout's arrays: each entry times its own odd multiplier, then mixed."""
    values = jnp.concatenate([jnp.ravel(leaf).astype(jnp.uint32) for leaf in jax.tree.leaves(layout)])
    multipliers = (jnp.arange(values.size, dtype=jnp.uint32) * jnp.uint32(2) + 1) * jnp.uint32(2654435761)
    h = jnp.sum((values + 1) * multipliers, dtype=jnp.uint32)
    h = (h ^ (h >> 16)) * jnp.uint32(0x45D9F3B)  # Mixing, so the low bits depend on every entry.
    return h ^ (h >> 16)


def is_held_out(layout: Layout) -> jnp.ndarray:
    """True for the layouts kept out of training."""
    return fingerprint(layout) % HELD_OUT_MODULUS == 0


class LifetimeEnvironment(Environment):
    """An environment whose layout is drawn per lifetime and kept across episode resets.

    Subclasses (frozen dataclasses) define `sample_layout(key)`, any layout of
    their family, and `start_episode(layout, key)`; their state has a `layout`
    field, and a `held_out_layouts` field (0: training layouts).
    """

    held_out_layouts: int

    @abc.abstractmethod
    def sample_layout(self, key: chex.PRNGKey) -> Layout:
        """Any layout of the family, held out or not."""

    @abc.abstractmethod
    def start_episode(self, layout: Layout, key: chex.PRNGKey) -> tuple[Any, TimeStep]:
        """A FIRST timestep on `layout`, everything not in the layout drawn from `key`."""

    def draw_layout(self, key: chex.PRNGKey) -> Layout:
        """A training layout for a fresh lifetime: never one of the held-out layouts."""
        return self._first_layout(key, lambda layout: ~is_held_out(layout))

    def held_out_layout(self, index: chex.Numeric) -> Layout:
        """The held-out layout number `index` (the same on every machine and for every seed)."""
        return self._first_layout(jax.random.fold_in(jax.random.key(_HELD_OUT_SEED), index), is_held_out)

    def start_lifetime(self, layout: Layout, key: chex.PRNGKey) -> tuple[Any, TimeStep]:
        """A lifetime on `layout`: its first episode (what `reset` does after drawing the layout)."""
        return self.start_episode(layout, key)

    def reset(self, key: chex.PRNGKey) -> tuple[Any, TimeStep]:
        layout_key, episode_key = jax.random.split(key)
        if self.held_out_layouts:
            index = jax.random.randint(layout_key, (), 0, self.held_out_layouts)
            return self.start_lifetime(self.held_out_layout(index), episode_key)
        return self.start_lifetime(self.draw_layout(layout_key), episode_key)

    def reset_episode(self, state: Any, key: chex.PRNGKey) -> tuple[Any, TimeStep]:
        return self.start_episode(state.layout, key)

    def _first_layout(self, key: chex.PRNGKey, accept) -> Layout:
        """The first of the layouts drawn from `key`'s stream that `accept` takes (at most `_MAX_DRAWS` draws)."""

        def draw(carry):
            key, _, draws = carry
            key, layout_key = jax.random.split(key)
            return key, self.sample_layout(layout_key), draws + 1

        def rejected(carry):
            _, layout, draws = carry
            return (draws == 0) | (~accept(layout) & (draws < _MAX_DRAWS))

        placeholder = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), jax.eval_shape(self.sample_layout, key))
        _, layout, _ = jax.lax.while_loop(rejected, draw, (key, placeholder, 0))  # `sample_layout` traced once.
        return layout


def check_options(variant: Any, variants: dict, held_out_layouts: Any) -> None:
    """Raises `ValueError` unless `variant` names one of `variants` and `held_out_layouts` is a whole number >= 0."""
    if variant not in variants:
        raise ValueError(f"variant must be one of {sorted(variants)}, got {variant!r}.")
    if not is_whole_number(held_out_layouts, 0):
        raise ValueError(f"held_out_layouts must be a whole number >= 0, got {held_out_layouts!r}.")
