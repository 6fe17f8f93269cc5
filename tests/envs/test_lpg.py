"""LPG's meta-training environments: each family's rules on scripted steps, lifetimes and held-out layouts.

dm_env conformance for the registered names is in test_dm_env_adapter.py.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.envs import FIRST, LAST, MID, make, wrap_for_training
from podracer.envs.lpg import DelayedChain, RandomGridWorld, TabularGridWorld, chain, is_held_out, random_grid, tabular
from podracer.envs.lpg.chain import ChainLayout
from podracer.envs.lpg.random_grid import RandomLayout
from podracer.envs.lpg.tabular import TabularLayout

STAY, NORTH, EAST, SOUTH, SOUTH_WEST, WEST = 0, 1, 3, 5, 6, 7  # grid.MOVES


def _run(env, state, actions):
    """Steps `state` through `actions` with one compiled step; the timesteps' (step type, reward, discount)."""
    step, record = jax.jit(env.step), []
    for action in actions:
        state, timestep = step(state, action)
        record.append((int(timestep.step_type), float(timestep.reward), float(timestep.discount)))
    return state, timestep, record


def test_tabular_sparse_collecting_pays_and_terminates():
    env = TabularGridWorld(variant="sparse")  # 13 x 13: +1 and -1, each ending the episode.
    layout = TabularLayout(jnp.array([2, 5 * 13 + 5], jnp.int32))  # +1 at (0, 2), -1 at (5, 5).
    state, first = env.start_lifetime(layout, jax.random.key(0))
    state = state.replace(agent=jnp.int32(0))  # The top-left corner.
    assert int(first.step_type) == FIRST
    state, last, record = _run(env, state, [NORTH, WEST, EAST, EAST])
    # Off the grid twice (the agent stays), then east twice onto the +1, which ends the episode.
    assert record == [(MID, 0.0, 1.0), (MID, 0.0, 1.0), (MID, 0.0, 1.0), (LAST, 1.0, 0.0)]
    assert int(state.agent) == 2 and state.present.tolist() == [False, True]
    # The tabular state: cell 2, only object 1 present (bits 0b10).
    assert int(jnp.argmax(last.observation)) == 2 * 4 + 2 and float(last.observation.sum()) == 1.0


def test_tabular_dense_objects_stay_home_and_respawn_there():
    env = TabularGridWorld(variant="dense")  # [1, 0, 0.05] x 2, [-1, 0.5, 0.1], [-1, 0, 0.5]
    layout = TabularLayout(jnp.array([1, 2, 50, 12], jnp.int32))  # (0, 1), (0, 2), (4, 6), (1, 1).
    state, _ = env.start_lifetime(layout, jax.random.key(1))
    state = state.replace(agent=jnp.int32(0))
    # East onto +1, east onto +1, south-west onto the never-terminating -1: a random walk never ends here.
    state, _, record = _run(env, state, [EAST, EAST, SOUTH_WEST, STAY])
    assert [r[1] for r in record] == [1.0, 1.0, -1.0, 0.0] and all(r[0] == MID for r in record)
    np.testing.assert_array_equal(state.objects, layout.objects)  # Collected objects keep their cells.


def _statistics(env, state, action, count=4000):
    """Whether each of `count` steps of `state` from different keys terminated, and which objects are present."""
    keys = jax.random.split(jax.random.key(2), count)
    states, timesteps = jax.jit(jax.vmap(lambda key: env.step(state.replace(key=key), action)))(keys)
    return np.asarray(timesteps.discount == 0.0), np.asarray(states.present)


def test_tabular_termination_and_respawn_probabilities():
    env = TabularGridWorld(variant="dense")
    layout = TabularLayout(jnp.array([1, 2, 11, 60], jnp.int32))  # The [-1, 0.5, 0.1] one at (1, 0).
    state, _ = env.start_lifetime(layout, jax.random.key(0))
    # Objects 0 and 3 already collected; the agent steps south onto object 2.
    state = state.replace(agent=jnp.int32(0), present=jnp.array([False, True, True, False]))
    terminated, present = _statistics(env, state, SOUTH)
    assert abs(terminated.mean() - 0.5) < 0.04  # Object 2's termination probability.
    assert abs(present[:, 0].mean() - 0.05) < 0.015 and abs(present[:, 3].mean() - 0.5) < 0.04  # Respawns.
    assert not present[:, 2].any() and present[:, 1].all()  # Just collected: absent for this step at least.


def test_random_grid_places_and_respawns_objects_on_free_cells():
    env = RandomGridWorld(variant="very_dense")  # 11 x 11, one [1, 0, 1] object: it reappears a step after collection.
    pillars = (np.arange(11)[:, None] % 2 == 1) & (np.arange(11)[None, :] % 2 == 1)
    walls = pillars & (np.random.default_rng(0).random((11, 11)) < 0.5)
    layout = RandomLayout(jnp.asarray(walls.ravel()))

    def lifetime(key):
        state, first = env.start_lifetime(layout, key)
        moved = state.replace(agent=jnp.int32(0), objects=jnp.array([11], jnp.int32))  # The object just south.
        collected, timestep = env.step(moved, SOUTH)
        return state, first, timestep.reward, collected.present, env.step(collected, STAY)[0]

    states, firsts, rewards, present, after = jax.jit(jax.vmap(lifetime))(jax.random.split(jax.random.key(4), 300))
    observation = np.asarray(firsts.observation[0])
    assert observation.shape == env.observation_spec().shape == (11, 11, 3)
    np.testing.assert_array_equal(observation[..., 0], walls)
    assert observation[..., 1].flat[int(states.agent[0])] == 1.0 and observation[..., 1].sum() == 1.0
    assert observation[..., 2].flat[int(states.objects[0, 0])] == 1.0 and observation[..., 2].sum() == 1.0
    starts = np.asarray(jnp.concatenate([states.agent[:, None], states.objects], axis=1))
    assert not walls.flat[starts].any() and (starts[:, 0] != starts[:, 1]).all() and len(np.unique(starts)) > 50
    assert (np.asarray(rewards) == 1.0).all() and not np.asarray(present).any()
    # Respawned at once, on a free cell that is not the agent's, anywhere on the grid.
    cells = np.asarray(after.objects[:, 0])
    assert np.asarray(after.present).all() and not walls.flat[cells].any() and (cells != 11).all()
    assert len(np.unique(cells)) > 50


@pytest.mark.parametrize("noisy", [False, True])
def test_delayed_chain_pays_only_for_the_first_choice(noisy):
    env = DelayedChain(variant="short_noisy" if noisy else "short")
    layout = ChainLayout(jnp.int32(6), jnp.int32(1))
    returns = {}
    for first_action in (0, 1):
        for later in ([0] * 5, [1] * 5, [1, 0, 0, 1, 0]):
            state, _ = env.start_lifetime(layout, jax.random.key(5))  # The same distractors for every sequence.
            _, last, record = _run(env, state, [first_action, *later])
            assert [r[0] for r in record] == [MID] * 5 + [LAST] and record[-1][1:] == (
                (1.0, 0.0) if first_action else (-1.0, 0.0)
            )
            distractors = [r[1] for r in record[:-1]]
            assert set(distractors) <= ({-1.0, 1.0} if noisy else {0.0})
            returns.setdefault(first_action, set()).add(tuple(distractors))
            assert int(jnp.argmax(last.observation)) == 1 + first_action * 30 + 5  # The chain's last state.
    assert len(returns[0]) == len(returns[1]) == 1 and returns[0] == returns[1]  # The later actions change nothing.


@pytest.mark.parametrize(
    "name,kwargs",
    [("lpg_delayed_chain", {}), pytest.param("lpg_random_grid", {"variant": "small_sparse"}, marks=pytest.mark.slow)],
)
def test_layout_is_drawn_per_lifetime_and_kept_across_episodes(name, kwargs):
    """Under auto-reset (the random grid's objects move every episode, its walls stay)."""
    env = wrap_for_training(make(name, **kwargs))  # Auto-reset, over a batch.

    def step(state, key):
        state, timestep = env.step(state, jax.random.randint(key, (4,), 0, env.action_spec().num_values))
        return state, (state.env_state.env_state.layout, timestep.step_type)

    def run(key):
        state, _ = env.reset(jax.random.split(key, 4))
        return jax.lax.scan(step, state, jax.random.split(key, 120))[1]

    layouts, step_types = jax.jit(run)(jax.random.key(6))
    first = jax.tree.map(lambda x: x[0], layouts)
    for leaf, first_leaf in zip(jax.tree.leaves(layouts), jax.tree.leaves(first), strict=True):
        np.testing.assert_array_equal(leaf, np.broadcast_to(first_leaf, leaf.shape))  # Every step, every episode.
    assert len(as_set(first)) > 1  # Lifetimes differ.
    assert ((np.asarray(step_types) == FIRST).sum(axis=0) >= 1).all()  # Every environment started a new episode.


def as_set(layouts):
    """A batch of layouts as a set of tuples of their entries."""
    rows = np.concatenate([np.asarray(leaf).reshape(len(leaf), -1) for leaf in jax.tree.leaves(layouts)], axis=1)
    return set(map(tuple, rows.tolist()))


@pytest.mark.slow  # Compiles three vmapped rejection loops: 3 to 7 s.
def test_held_out_layouts_are_disjoint_from_training_layouts():
    env = RandomGridWorld(variant="small")  # 64 layouts: 400 draws see nearly every training one.
    evaluation = dataclasses.replace(env, held_out_layouts=3)

    def layouts(key):
        training = jax.vmap(env.draw_layout)(jax.random.split(key, 400))
        held_out = jax.vmap(env.held_out_layout)(jnp.arange(20))
        evaluated = jax.vmap(evaluation.reset)(jax.random.split(key, 30))[0].layout
        return training, held_out, evaluated, jax.vmap(is_held_out)(training), jax.vmap(is_held_out)(held_out)

    training, held_out, evaluated, training_held_out, held_out_held_out = jax.jit(layouts)(jax.random.key(8))
    assert not training_held_out.any() and held_out_held_out.all()
    assert len(as_set(held_out)) > 1 and not as_set(training) & as_set(held_out)
    # `held_out_layouts=3` resets onto the first three held-out layouts only.
    assert as_set(evaluated) <= as_set(jax.tree.map(lambda x: x[:3], held_out))


def test_every_variant_has_training_and_held_out_layouts():
    """Else drawing one of the two would never end (`lifetimes._MAX_DRAWS` stops it, with a wrong layout)."""
    lengths, actions = np.meshgrid(np.arange(5, 51), np.arange(2), indexing="ij")
    chains = ChainLayout(jnp.asarray(lengths.ravel()), jnp.asarray(actions.ravel()))
    held_out = np.asarray(jax.vmap(is_held_out)(chains)).reshape(lengths.shape)
    for variant in chain.VARIANTS.values():
        in_range = held_out[: variant.max_length - 4]
        assert in_range.any() and not in_range.all()
    for variant in random_grid.VARIANTS.values():  # The smallest grid has 6 pillars: 64 layouts.
        assert variant.height * variant.width >= 35
    assert all(len(variant.objects) < variant.height * variant.width for variant in tabular.VARIANTS.values())


def test_bad_options_are_refused():
    for make_bad in (
        lambda: TabularGridWorld(variant="huge"),
        lambda: RandomGridWorld(held_out_layouts=-1),
        lambda: DelayedChain(held_out_layouts=True),
        lambda: TabularGridWorld(max_episode_steps=0),
    ):
        with pytest.raises(ValueError):
            make_bad()
