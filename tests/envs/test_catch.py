"""Catch and NestedCatch against bsuite's rules, and the training wrappers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

from podracer.envs import FIRST, LAST, MID, AutoReset, Catch, EpisodeStatistics, NestedCatch, make
from podracer.envs.catch import CatchState
from podracer.envs.wrappers import wrap_for_training

LEFT, STAY, RIGHT = 0, 1, 2
CATCH = Catch()
RESET = jax.jit(CATCH.reset)
STEP = jax.jit(CATCH.step)


def _bsuite_episode(ball_x, actions, rows=10, columns=5):
    """bsuite's Catch, transcribed: (paddle_x per step, final reward)."""
    paddle_x, ball_y = columns // 2, 0
    paddles = []
    for action in actions:
        paddle_x = min(max(paddle_x + (action - 1), 0), columns - 1)
        ball_y += 1
        paddles.append(paddle_x)
    assert ball_y == rows - 1
    return paddles, (1.0 if paddle_x == ball_x else -1.0)


def test_reset_matches_bsuite():
    assert (CATCH.rows, CATCH.columns) == (10, 5)
    keys = np.random.default_rng(0).integers(0, 2**32, (50, 2), dtype=np.uint32)  # Raw threefry keys.
    resets = jax.device_get([RESET(key) for key in keys])
    states, timesteps = jax.tree.map(lambda *xs: np.stack(xs), *resets)
    assert set(np.unique(states.ball_x)) == set(range(5))  # Uniform over the top row's columns.
    assert (states.ball_y == 0).all()
    assert (states.paddle_x == 2).all()  # Middle column of the bottom row.
    assert (timesteps.step_type == FIRST).all()
    board = timesteps.observation[0]
    assert board.shape == (10, 5) and board.dtype == np.float32
    expected = np.zeros((10, 5), np.float32)
    expected[0, states.ball_x[0]] = 1.0
    expected[9, 2] = 1.0
    np.testing.assert_array_equal(board, expected)
    CATCH.observation_spec().validate(board)


@pytest.mark.parametrize(
    "ball_x, actions",
    [
        (0, [LEFT] * 9),  # Paddle clipped at the left edge, catches.
        (4, [RIGHT] * 9),  # Clipped at the right edge, catches.
        (2, [STAY] * 9),  # Ball straight above the paddle.
        (0, [RIGHT] * 9),  # Misses.
        (3, [LEFT, LEFT, RIGHT, RIGHT, RIGHT, STAY, LEFT, RIGHT, STAY]),
        (1, [RIGHT, RIGHT, LEFT, LEFT, LEFT, LEFT, LEFT, STAY, RIGHT]),
    ],
)
def test_episode_matches_bsuite(ball_x, actions):
    paddles, final_reward = _bsuite_episode(ball_x, actions)
    state = CatchState(jnp.int32(ball_x), jnp.int32(0), jnp.int32(2))
    for t, (action, paddle_x) in enumerate(zip(actions, paddles, strict=True)):
        state, timestep = STEP(state, action)
        assert int(state.ball_x) == ball_x and int(state.ball_y) == t + 1  # One row per step.
        assert int(state.paddle_x) == paddle_x
        board = np.asarray(timestep.observation)
        expected = np.zeros((10, 5), np.float32)
        expected[t + 1, ball_x] = 1.0
        expected[9, paddle_x] = 1.0
        np.testing.assert_array_equal(board, expected)
        if t < 8:
            assert int(timestep.step_type) == MID
            assert float(timestep.reward) == 0.0 and float(timestep.discount) == 1.0
        else:  # The ninth step lands the ball on the bottom row.
            assert int(timestep.step_type) == LAST
            assert float(timestep.reward) == final_reward
            assert float(timestep.discount) == 0.0


def test_nested_catch_structure_matches_spec():
    env = NestedCatch()
    spec = env.observation_spec()
    _, timestep = jax.device_get(jax.jit(env.reset)(np.array([0, 1], np.uint32)))
    obs = timestep.observation
    assert jax.tree.structure(obs) == jax.tree.structure(spec, is_leaf=lambda s: isinstance(s, specs.Array))
    assert set(obs) == {"board", "positions"} and set(obs["positions"]) == {"ball", "paddle"}
    for value, array_spec in zip(jax.tree.leaves(obs), jax.tree.leaves(spec), strict=True):
        array_spec.validate(value)
    np.testing.assert_array_equal(obs["positions"]["paddle"], [0.5])
    assert obs["positions"]["ball"][1] == 0.0
    assert obs["positions"]["ball"][0] in {0.0, 0.25, 0.5, 0.75, 1.0}
    assert make("nested_catch") == env and make("catch", rows=6) == Catch(rows=6)


# One jitted rollout of the training wrappers, EpisodeStatistics(AutoReset(Catch)),
# shared by the wrapper tests: STAY throughout, except a RIGHT and a LEFT on the
# steps right after the first two LAST timesteps (which must be ignored).
NUM_STEPS = 200
ACTIONS = np.full(NUM_STEPS, STAY, np.int32)
ACTIONS[9], ACTIONS[19] = RIGHT, LEFT


@pytest.fixture(scope="module")
def rollout():
    env = wrap_for_training(CATCH, batched=False)
    assert isinstance(env, EpisodeStatistics) and isinstance(env.env, AutoReset)

    @jax.jit
    def run(key, actions):
        state, _ = env.reset(key)
        step = lambda s, a: (lambda s2, t: (s2, (s2, t)))(*env.step(s, a))  # noqa: E731
        return jax.lax.scan(step, state, actions)[1]

    return jax.device_get(run(np.array([0, 2], np.uint32), ACTIONS))


def test_auto_reset_returns_last_then_first_ignoring_action(rollout):
    states, timesteps = rollout
    auto = states.env_state  # AutoResetState.
    step_types = list(timesteps.step_type[:20])
    assert step_types == [MID] * 8 + [LAST] + [FIRST] + [MID] * 8 + [LAST] + [FIRST]
    assert timesteps.discount[8] == 0.0 and timesteps.reward[8] in (-1.0, 1.0)  # Final transition kept.
    assert timesteps.reward[9] == 0.0 and timesteps.discount[9] == 1.0
    # The step after LAST is a fresh episode: ball on the top row, paddle centred (action ignored).
    for t in (9, 19):
        assert auto.env_state.ball_y[t] == 0 and auto.env_state.paddle_x[t] == 2
        np.testing.assert_array_equal(timesteps.observation[t][9], np.eye(5, dtype=np.float32)[2])
    assert auto.needs_reset[8] and not auto.needs_reset[9]
    np.testing.assert_array_equal(np.flatnonzero(timesteps.step_type == LAST), np.arange(8, NUM_STEPS, 10))
    # Each reset uses a new key: the ball's column varies between episodes.
    assert len(set(auto.env_state.ball_x[timesteps.step_type == FIRST].tolist())) > 1


def test_episode_statistics_report_the_finished_episode(rollout):
    states, timesteps = rollout
    last = np.flatnonzero(timesteps.step_type == LAST)
    np.testing.assert_array_equal(states.episode_length[last], 9)
    np.testing.assert_array_equal(states.episode_return[last], timesteps.reward[last])  # 0 until the end.
    assert set(timesteps.reward[last].tolist()) == {-1.0, 1.0}
    first = np.flatnonzero(timesteps.step_type == FIRST)
    np.testing.assert_array_equal(states.episode_length[first], 0)
    np.testing.assert_array_equal(states.episode_return[first], 0.0)
    # Within an episode the statistics accumulate step by step.
    np.testing.assert_array_equal(states.episode_length[:9], np.arange(1, 10))
    np.testing.assert_array_equal(states.episode_return[:8], 0.0)


def test_batched_auto_reset_equals_vmapped_single_environment_auto_reset():
    """Around a batch, AutoReset resets under `lax.cond` only when needed; the result must be bitwise the same."""
    num_envs, num_steps = 6, 40
    actions = np.random.default_rng(0).integers(0, 3, (num_steps, num_envs)).astype(np.int32)
    keys = jax.random.split(jax.random.key(3), num_envs)

    def run(reset, step):
        state, first = reset(keys)
        return first, jax.lax.scan(lambda s, a: (lambda s2, t: (s2, (s2, t)))(*step(s, a)), state, actions)[1]

    single = wrap_for_training(CATCH, batched=False)
    batched = wrap_for_training(CATCH)
    expected = jax.jit(lambda: run(jax.vmap(single.reset), jax.vmap(single.step)))()
    got = jax.jit(lambda: run(batched.reset, batched.step))()
    assert int(np.sum(got[1][1].first())) >= num_envs * 3  # Several resets happened.
    raw = lambda tree: jax.tree.leaves(jax.tree.map(_key_data, tree))  # noqa: E731
    for a, b in zip(raw(got), raw(expected), strict=True):
        np.testing.assert_array_equal(a, b)


def _key_data(x):
    return jax.random.key_data(x) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x
