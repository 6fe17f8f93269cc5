"""The POPGym Arcade adapter: the games' own transitions, their ends vs their time limits, specs, settings.

Each stepped game compiles once (~10 s on a CPU: its renderer), in `_rollout`;
a game's tests share one random episode (`_episode`) and reuse the compiled
function from altered states.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs
from popgym_arcade.registration import REGISTERED_ENVIRONMENTS

from podracer.envs import FIRST, LAST
from podracer.envs.suites import popgym_arcade_env

pytestmark = pytest.mark.slow  # The whole file: see conftest.py.

# Steps per random episode, and each game's time limit as `step_env` checks it: a game ends for its time limit on
# the step from a state whose `time` is TIME_LIMIT_FROM (CartPole reads it before the step, the others after).
# AutoEncodeEasy and TetrisEasy are left out: they go through the adapter as these do (Tetris's time limit is read
# after the step, as Breakout's), and compiling a renderer takes 5 to 20 s in the suite.
STEPS = {"MineSweeperEasy": 40, "CartPoleEasy": 40, "BreakoutEasy": 200}
TIME_LIMIT_FROM = {"CartPoleEasy": 200, "BreakoutEasy": 1999}


@functools.partial(jax.jit, static_argnums=0)
def _rollout(env, state, actions):
    """The adapter's timesteps over `actions` from `state`, each beside the game's `step_env` from the same state and key.

    Returns (the adapter's states before each step, its timesteps, the game's (observations, rewards, dones, infos)),
    stacked over time.
    """

    def step(state, action):
        _, step_key = jax.random.split(state.key)  # The adapter's split: (next key, step key).
        observation, _, reward, done, info = env.suite_env.step_env(step_key, state.env_state, action, env.params)
        info = {name: info[name] for name in ("terminated", "truncated")}
        next_state, timestep = env.step(state, action)
        return next_state, (state, timestep, (observation, reward, done, info))

    return jax.lax.scan(step, state, actions)[1]


@functools.cache
def _episode(task):
    """The game's adapter, its FIRST timestep, random actions and the rollout of them, up to the first end."""
    env = popgym_arcade_env.make(task)
    state, first = jax.jit(env.reset)(jax.random.key(0))
    actions = jnp.asarray(np.random.default_rng(1).integers(5, size=STEPS[task]), jnp.int32)
    states, timesteps, suite = _rollout(env, state, actions)
    dones = np.asarray(suite[2])
    assert dones.any(), f"{task}: no end in {STEPS[task]} random steps"
    return env, first, actions, states, timesteps, suite, int(np.argmax(dones))


def _step_at(task, index, time):
    """The adapter's timestep and the game's done for step `index` of the random episode, from its state at `time`."""
    env, _, actions, states, _, _, _ = _episode(task)
    state = jax.tree.map(lambda leaf: leaf[index], states)
    state = state.replace(env_state=state.env_state.replace(time=jnp.asarray(time, state.env_state.time.dtype)))
    _, timesteps, (_, _, dones, _) = _rollout(env, state, jnp.roll(actions, -index))
    return jax.tree.map(lambda leaf: leaf[0], timesteps), bool(dones[0])


@pytest.mark.slow  # Compiles each game's renderer: ~10 s a game.
@pytest.mark.parametrize("task", list(STEPS))
def test_observations_rewards_and_ends_are_the_games_step_env(task):
    env, first, _, _, timesteps, (observations, rewards, dones, _), end = _episode(task)
    assert int(first.step_type) == FIRST
    np.testing.assert_array_equal(timesteps.observation[: end + 1], observations[: end + 1])
    np.testing.assert_array_equal(timesteps.reward[: end + 1], np.asarray(rewards[: end + 1], np.float32))
    np.testing.assert_array_equal(timesteps.step_type[: end + 1] == LAST, dones[: end + 1])
    spec = env.observation_spec()
    assert (spec.shape, spec.dtype) == (observations.shape[1:], observations.dtype)
    spec.validate(np.asarray(timesteps.observation[end]))


@pytest.mark.slow
@pytest.mark.parametrize("task", list(STEPS))
def test_the_games_own_end_is_termination(task):
    """Each random episode ends by the game's rules, well before its time limit: discount 0, the final observation."""
    _, _, _, _, timesteps, (observations, _, _, info), end = _episode(task)
    assert int(timesteps.step_type[end]) == LAST and float(timesteps.discount[end]) == 0.0
    assert (timesteps.discount[:end] == 1.0).all()
    np.testing.assert_array_equal(timesteps.observation[end], observations[end])
    if task == "MineSweeperEasy":  # Its info's flags agree with its done.
        assert info["terminated"][end] and not info["truncated"][end]


@pytest.mark.slow
def test_minesweeper_time_limit_is_last_with_discount_one():
    env, _, _, states, _, _, _ = _episode("MineSweeperEasy")
    reset_state = jax.tree.map(lambda leaf: leaf[0], states)
    moves = jnp.zeros(STEPS["MineSweeperEasy"], jnp.int32)  # Only moving up: never a mine, the time limit of 32 steps.
    _, timesteps, (_, _, dones, info) = _rollout(env, reset_state, moves)
    end = int(np.argmax(dones))
    assert info["truncated"][end] and not info["terminated"][end] and not dones[:end].any()
    assert int(timesteps.step_type[end]) == LAST and float(timesteps.discount[end]) == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("task", list(TIME_LIMIT_FROM))
def test_time_limit_alone_is_truncation_and_with_the_games_end_termination(task):
    """The first step, and the step of the episode's end, replayed from states at the time limit."""
    end = _episode(task)[-1]
    timestep, done = _step_at(task, 0, TIME_LIMIT_FROM[task])
    assert done and int(timestep.step_type) == LAST and float(timestep.discount) == 1.0
    timestep, done = _step_at(task, end, TIME_LIMIT_FROM[task])
    assert done and int(timestep.step_type) == LAST and float(timestep.discount) == 0.0


def test_specs_describe_the_images_without_stepping():
    minesweeper = popgym_arcade_env.make("MineSweeperEasy")  # Its space says 4x4x3; its images are 128x128x3.
    assert minesweeper.suite_env.observation_space(minesweeper.params).shape != (128, 128, 3)
    assert minesweeper.observation_spec() == specs.BoundedArray((128, 128, 3), np.uint8, 0, 255, name="observation")
    big = popgym_arcade_env.make("MineSweeperEasy", obs_size=256).observation_spec()
    assert (big.shape, big.dtype) == ((256, 256, 3), np.uint8)
    breakout = popgym_arcade_env.make("BreakoutEasy")
    observation, _ = jax.eval_shape(breakout.suite_env.reset_env, jax.random.key(0), breakout.params)
    assert breakout.observation_spec().dtype == observation.dtype == np.float32  # Breakout renders float32.
    assert minesweeper.action_spec() == specs.DiscreteArray(5, np.int32, name="action")


@pytest.mark.slow  # Builds and traces each game at its Easy level (its levels share its code): ~20 s.
@pytest.mark.parametrize("task", [task for task in REGISTERED_ENVIRONMENTS if task.endswith("Easy")])
def test_every_game_builds_with_specs_of_what_it_returns(task):
    env = popgym_arcade_env.make(task)
    observation, _ = jax.eval_shape(env.suite_env.reset_env, jax.random.key(0), env.params)
    spec = env.observation_spec()
    assert (spec.shape, spec.dtype) == (observation.shape, observation.dtype)
    assert env.action_spec().num_values == env.suite_env.action_space(env.params).n


def test_tasks_are_popgym_arcade_ids():
    assert popgym_arcade_env.task_names() == list(REGISTERED_ENVIRONMENTS)
    assert popgym_arcade_env.is_task("CountRecallEasy") and not popgym_arcade_env.is_task("CountRecall")


def test_settings_are_free_constructor_arguments_or_declared_env_params():
    env = popgym_arcade_env.make("MineSweeperEasy", partial_obs=True)
    assert env.suite_env.partial_obs is True and env.suite_env.board_size == 4  # The level's own setting stays.
    assert popgym_arcade_env.make("CartPoleEasy", gravity=5.0).params.gravity == 5.0
    assert popgym_arcade_env.make("BreakoutEasy", max_steps_in_episode=10).params.max_steps_in_episode == 10
    assert popgym_arcade_env.make("MineSweeperEasy") == popgym_arcade_env.make("MineSweeperEasy") != env


@pytest.mark.parametrize(
    "task, kwargs, message",
    [
        (
            "MineSweeperEasy",
            {"partial": True},
            r"MineSweeperEasy has no setting partial: .*\['partial_obs', 'obs_size'\]",
        ),
        ("MineSweeperEasy", {"num_mines": 3}, r"no setting num_mines"),  # The level sets it.
        ("NoisyCartPoleEasy", {"n_sigma": 0.5}, r"no setting n_sigma"),
        ("CartPoleEasy", {"max_steps_in_episode": 50}, r"no setting max_steps_in_episode: its env params are \[.*"),
        ("BreakoutEasy", {"max_steps_in_episode": 0}, r"max_steps_in_episode must be a whole number >= 1, got 0"),
        ("MineSweeperEasy", {"partial_obs": "yes"}, r"partial_obs must be True or False, got 'yes'"),
        ("CartPoleEasy", {"obs_size": 64}, r"CartPoleEasy's obs_size must be one of \[128, 256\], got 64"),
        ("CartPoleEasy", {"obs_size": 128.0}, r"CartPoleEasy's obs_size must be a whole number, got 128.0"),
    ],
)
def test_bad_settings_raise_value_errors_naming_them(task, kwargs, message):
    with pytest.raises(ValueError, match=message):
        popgym_arcade_env.make(task, **kwargs)
