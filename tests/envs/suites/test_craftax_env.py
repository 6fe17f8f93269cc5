"""The Craftax adapter: Craftax's own transitions, death vs the time limit, specs, settings.

Compiling Craftax's world generation and step takes ~15 s on a CPU, so one
environment (Craftax-Classic-Symbolic-v1 with a short time limit) is compiled
once, by `_rollout`, and every stepping test reuses it; the other tasks are
checked without stepping (`jax.eval_shape`).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from craftax.craftax_classic.constants import BlockType
from dm_env import specs

from podracer.envs import FIRST, LAST, MID
from podracer.envs.suites import craftax_env

pytestmark = pytest.mark.slow  # The whole file: see conftest.py.

TASK = "Craftax-Classic-Symbolic-v1"
LIMIT = 8  # max_timesteps of the stepped environment: its episodes are truncated after 8 steps.
NOOP = 0  # Craftax's action 0: the player stays where it is.


@functools.partial(jax.jit, static_argnums=0)
def _rollout(env, state, actions):
    """The adapter's timesteps over `actions` from `state`, each beside Craftax's `step_env` from the same state and key.

    Returns (the adapter's timesteps, (Craftax's observations, rewards, dones, stepped states)), stacked over time.
    """

    def step(state, action):
        _, step_key = jax.random.split(state.key)  # The adapter's split: (next key, step key).
        observation, after, reward, done, _ = env.suite_env.step_env(step_key, state.env_state, action, env.params)
        state, timestep = env.step(state, action)
        return state, (timestep, (observation, reward, done, after))

    return jax.lax.scan(step, state, actions)[1]


@pytest.fixture(scope="module")
def classic():
    """The stepped environment, a reset state (and its FIRST timestep) and a random rollout of LIMIT steps from it."""
    env = craftax_env.make(TASK, max_timesteps=LIMIT)
    state, first = jax.jit(env.reset)(jax.random.key(0))
    actions = jnp.asarray(np.random.default_rng(0).integers(17, size=LIMIT), jnp.int32)
    return env, state, first, _rollout(env, state, actions)


def _in_lava(state, timestep):
    """`state` with lava under the player, at `timestep` (Craftax's `game_over` reads both)."""
    env_state = state.env_state
    row, column = env_state.player_position
    lava = env_state.map.at[row, column].set(BlockType.LAVA.value)
    return state.replace(env_state=env_state.replace(map=lava, timestep=jnp.asarray(timestep, jnp.int32)))


@pytest.mark.slow  # Compiles Craftax's world generation and step: ~15 s, shared by the tests below.
def test_observations_rewards_and_ends_are_craftax_step_env(classic):
    env, _, first, (timesteps, (observations, rewards, dones, _)) = classic
    assert int(first.step_type) == FIRST
    end = int(np.argmax(dones)) if dones.any() else LIMIT - 1
    np.testing.assert_array_equal(timesteps.observation[: end + 1], observations[: end + 1])
    np.testing.assert_array_equal(timesteps.reward[: end + 1], rewards[: end + 1].astype(np.float32))
    np.testing.assert_array_equal(timesteps.step_type[: end + 1] == LAST, dones[: end + 1])
    assert timesteps.reward.dtype == jnp.float32 and timesteps.observation.dtype == jnp.float32


@pytest.mark.slow
def test_time_limit_is_last_with_discount_one_and_the_final_observation(classic):
    _, _, _, (timesteps, (observations, _, dones, after)) = classic
    assert not dones[:-1].any() and dones[-1]  # A random player does not die in 8 steps.
    assert int(after.timestep[-1]) == LIMIT  # Craftax ended the episode for its time limit.
    np.testing.assert_array_equal(timesteps.step_type, [MID] * (LIMIT - 1) + [LAST])
    np.testing.assert_array_equal(timesteps.discount, [1.0] * LIMIT)
    np.testing.assert_array_equal(timesteps.observation[-1], observations[-1])


@pytest.mark.slow
def test_death_is_last_with_discount_zero_and_the_final_observation(classic):
    env, state, _, _ = classic
    timesteps, (observations, _, dones, after) = _rollout(env, _in_lava(state, 0), jnp.full(LIMIT, NOOP, jnp.int32))
    assert dones[0] and int(after.timestep[0]) < LIMIT  # Craftax's own end: standing in lava, not the time limit.
    assert int(timesteps.step_type[0]) == LAST and float(timesteps.discount[0]) == 0.0
    np.testing.assert_array_equal(timesteps.observation[0], observations[0])


@pytest.mark.slow
def test_death_on_the_last_allowed_step_is_termination(classic):
    env, state, _, _ = classic
    timesteps, (_, _, dones, after) = _rollout(env, _in_lava(state, LIMIT - 1), jnp.full(LIMIT, NOOP, jnp.int32))
    assert dones[0] and int(after.timestep[0]) >= LIMIT  # Both ends at once.
    assert int(timesteps.step_type[0]) == LAST and float(timesteps.discount[0]) == 0.0


@pytest.mark.parametrize(
    "task, shape",
    [
        ("Craftax-Classic-Symbolic-v1", (1345,)),
        pytest.param("Craftax-Symbolic-v1", (8268,), marks=pytest.mark.slow),  # Tracing its world generation: ~8 s.
        # The pixel tasks take the same path (their images, channels-last float32, kept as Craftax makes them), but a
        # fresh install draws their textures first (Craftax caches them in its package folder): 21 s for
        # Craftax-Classic-Pixels-v1 and over a minute for Craftax-Pixels-v1, so the suite leaves them out.
    ],
)
def test_specs_are_craftax_spaces_read_without_stepping(task, shape):
    env = craftax_env.make(task)
    space = env.suite_env.observation_space(env.params)
    spec = env.observation_spec()
    assert (spec.shape, spec.dtype) == (tuple(space.shape), np.dtype(space.dtype)) == (shape, np.float32)
    assert (spec.minimum == space.low).all() and (spec.maximum == space.high).all()
    actions = env.suite_env.action_space(env.params).n
    assert env.action_spec() == specs.DiscreteArray(actions, np.int32, name="action")


def test_tasks_are_craftax_names():
    assert craftax_env.task_names() == list(craftax_env.TASKS)
    assert all(craftax_env.is_task(task) for task in craftax_env.TASKS)
    assert not craftax_env.is_task("Craftax-Classic-Symbolic-AutoReset-v1")  # Auto-resetting: not for podracer.
    assert not craftax_env.is_task("CartPole-v1")


def test_settings_are_env_params_or_static_env_params():
    env = craftax_env.make(TASK, max_timesteps=100, day_length=50, map_size=[32, 32])
    assert (env.params.max_timesteps, env.params.day_length) == (100, 50)
    assert env.suite_env.static_env_params.map_size == (32, 32)  # From a config's list.
    _, state = jax.eval_shape(env.suite_env.reset_env, jax.random.key(0), env.params)
    assert state.map.shape == (32, 32)
    assert craftax_env.make(TASK) == craftax_env.make(TASK) != env  # Hashable values: compiled functions are reused.


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"max_steps_in_episode": 5},
            r"craftax .* has no setting max_steps_in_episode: its env params are \[.*'max_timesteps'",
        ),
        ({"zombies": 1}, r"no setting zombies: .* its constructor takes \[.*'max_zombies'"),
        ({"max_timesteps": 0}, r"max_timesteps must be a whole number >= 1, got 0"),
        ({"always_diamond": "yes"}, r"always_diamond must be True or False, got 'yes'"),
        ({"max_zombies": 1.5}, r"max_zombies must be a whole number, got 1.5"),
    ],
)
def test_bad_settings_raise_value_errors_naming_them(kwargs, message):
    with pytest.raises(ValueError, match=message):
        craftax_env.make(TASK, **kwargs)
