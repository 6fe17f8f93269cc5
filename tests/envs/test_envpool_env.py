"""Host environments on envpool: dm_env episode boundaries, statistics, Atari's defaults, MuJoCo, seeding and errors.

Episode statistics are not the environment's: they are computed from its
timesteps as Sebulba's actors compute them, and checked against an independent
loop over the same stream (`envpool_streams`).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

from podracer.agents import Trajectory, transitions
from podracer.envs import FIRST, LAST, MID, EnvpoolEnvironment, HostEnvironment, make_envpool_env
from tests.envs.envpool_streams import check_stream, run

THETA_LIMIT = 12 * 2 * np.pi / 360  # CartPole-v1 terminates beyond these.
X_LIMIT = 2.4


def test_cartpole_time_limit_truncates_with_discount_one():
    env = make_envpool_env("CartPole-v1", num_envs=3, seed=0, max_episode_steps=5)
    assert isinstance(env, EnvpoolEnvironment) and isinstance(env, HostEnvironment)
    assert env.frames_per_step == 1 and env.max_episode_steps == 5 and env.num_envs == 3
    actions = np.tile(np.array([[0], [1]]), (7, 3))  # Alternating pushes: the pole stays up for 5 steps.
    timesteps, returns, lengths = run(env, actions)
    step_type, reward, discount = check_stream(timesteps, returns, lengths)
    episode = [FIRST, MID, MID, MID, MID, LAST]
    np.testing.assert_array_equal(step_type[:, 0], episode + episode + [FIRST, MID, MID])
    assert (step_type == step_type[:, :1]).all()
    assert (discount == 1).all()  # Truncation bootstraps.
    np.testing.assert_array_equal(reward[:, 0], ([0, 1, 1, 1, 1, 1] * 3)[:15])
    np.testing.assert_array_equal(returns[5], [5.0] * 3)  # At LAST: the finished episode's figures,
    np.testing.assert_array_equal(lengths[5], [5] * 3)
    np.testing.assert_array_equal(returns[6], [0.0] * 3)  # reset when the next one starts.
    env.close()
    env.close()  # Closing twice is harmless.


def test_cartpole_termination_has_discount_zero_and_statistics_match():
    env = make_envpool_env("CartPole-v1", num_envs=4, seed=1)
    assert env.max_episode_steps == 500
    actions = np.ones((40, 4), np.int32)  # Always push right: the pole falls within about ten steps.
    timesteps, returns, lengths = run(env, actions)
    step_type, reward, discount = check_stream(timesteps, returns, lengths)
    last = step_type == LAST
    assert last.sum(axis=0).min() >= 2
    assert (discount[last] == 0).all() and (reward[last] == 1).all()
    observation = np.stack([t.observation for t in timesteps])
    fallen = (np.abs(observation[..., 2]) > THETA_LIMIT) | (np.abs(observation[..., 0]) > X_LIMIT)
    np.testing.assert_array_equal(fallen, last)  # LAST carries the old episode's final (terminal) state.
    assert (np.abs(observation[step_type == FIRST]) <= 0.05).all()  # The new episode's initial state.
    np.testing.assert_array_equal(lengths[last], returns[last])  # Reward 1 per step.


def test_cartpole_random_stream_and_observations_stay_valid():
    env = make_envpool_env("CartPole-v1", num_envs=5, seed=2, max_episode_steps=30)
    actions = np.random.default_rng(0).integers(0, 2, (120, 5))
    timesteps, returns, lengths = run(env, actions)
    step_type, _, discount = check_stream(timesteps, returns, lengths)
    last = step_type == LAST
    assert (discount[last] == 0).any() and (discount[last] == 1).any()  # Both kinds of ending occurred.
    observations = [t.observation for t in timesteps]
    assert all(o.shape == (5, 4) and o.dtype == np.float32 for o in observations)
    assert len({o.tobytes() for o in observations}) == len(observations)  # Not overwritten by later steps.
    spec = env.observation_spec()
    assert spec.shape == (4,) and spec.dtype == np.float32
    assert env.action_spec().num_values == 2


def test_cartpole_terminal_on_last_allowed_step_reads_as_truncation():
    """A known envpool limitation (see the module docstring): non-Atari tasks cannot tell us."""
    actions = np.ones((12, 1), np.int32)
    timesteps, _, _ = run(make_envpool_env("CartPole-v1", 1, seed=1, max_episode_steps=100), actions)
    end = next(t for t, x in enumerate(timesteps) if x.step_type[0] == LAST)
    assert timesteps[end].discount[0] == 0
    timesteps, _, _ = run(make_envpool_env("CartPole-v1", 1, seed=1, max_episode_steps=end), actions)
    assert timesteps[end].step_type[0] == LAST and timesteps[end].discount[0] == 1


def test_atari_game_over_on_last_allowed_step_is_termination():
    """envpool flags it truncated; info["terminated"] restores termination, which wins."""
    actions = np.random.default_rng(0).integers(0, 4, (1000, 1))
    env = make_envpool_env("Breakout-v5", 1, seed=6)
    env.reset()
    for end, action in enumerate(actions, 1):  # noqa: B007 -- `end` is read after the loop.
        timestep = env.step(action)
        if timestep.step_type[0] == LAST:
            break
    assert timestep.discount[0] == 0 and end < 1000  # Game over, at step `end`.
    for limit, discount in ((end, 0.0), (end - 1, 1.0)):
        timesteps, _, _ = run(make_envpool_env("Breakout-v5", 1, seed=6, max_episode_steps=limit), actions[: limit + 1])
        assert timesteps[limit].step_type[0] == LAST and timesteps[limit].discount[0] == discount
        assert timesteps[limit + 1].step_type[0] == FIRST


def test_pong_observations_spec_and_defaults():
    env = make_envpool_env("Pong-v5", num_envs=2, seed=0)
    spec = env.observation_spec()
    assert spec.shape == (4, 84, 84) and spec.dtype == np.uint8
    assert env.action_spec().num_values == 6 and env.action_spec().dtype == np.int32
    assert env.frames_per_step == 4 and env.max_episode_steps == 27000
    config = env._pool.spec.config
    assert (config.stack_num, config.frame_skip, config.noop_max, config.img_height, config.img_width) == (
        4,
        4,
        30,
        84,
        84,
    )
    assert config.gray_scale and not config.episodic_life and not config.full_action_space
    assert config.repeat_action_probability == 0.0 and not config.reward_clip  # Clipping is the learner's.
    timesteps, returns, lengths = run(env, np.random.default_rng(0).integers(0, 6, (30, 2)))
    check_stream(timesteps, returns, lengths)
    for timestep in timesteps:
        assert timestep.observation.shape == (2, 4, 84, 84) and timestep.observation.dtype == np.uint8
        spec.validate(timestep.observation[1])


def test_reward_clip_in_the_learner_clips_while_episode_statistics_stay_unclipped_on_space_invaders():
    """Space Invaders pays 5 to 30 points an alien, so random play soon earns rewards above 1.

    The environment hands out the game's own rewards; the learner clips them
    (`transitions(..., reward_clip)`, from `config.agent.reward_clip`) while the
    episode statistics, computed from the same timesteps, report the real score.
    """
    actions = np.random.default_rng(0).integers(0, 6, (130, 1))
    timesteps, returns, lengths = run(make_envpool_env("SpaceInvaders-v5", 1, seed=2), actions)
    raw_reward = np.stack([t.reward for t in timesteps])
    assert raw_reward.max() > 1
    check_stream(timesteps, returns, lengths)  # Statistics of the unclipped rewards.
    assert returns.max() > 1

    stacked = jax.tree.map(lambda *xs: jnp.asarray(np.stack(xs)), *timesteps)
    trajectory = Trajectory(timestep=stacked, action=jnp.asarray(actions, jnp.int32), extras={})
    clipped = transitions(trajectory, 0.99, reward_clip=1.0).rewards
    np.testing.assert_array_equal(clipped, np.clip(raw_reward[1:], -1, 1))
    np.testing.assert_array_equal(transitions(trajectory, 0.99).rewards, raw_reward[1:])  # 0: no clipping.


@pytest.mark.parametrize("name, num_actions", [("CartPole-v1", 2), ("Pong-v5", 6)])
def test_same_seed_same_actions_same_observations(name, num_actions):
    actions = np.random.default_rng(3).integers(0, num_actions, (40, 2))
    first, _, _ = run(make_envpool_env(name, 2, seed=7), actions)
    second, _, _ = run(make_envpool_env(name, 2, seed=7, num_threads=1), actions)
    for a, b in zip(first, second, strict=True):
        jax.tree.map(np.testing.assert_array_equal, a, b)


def test_pool_is_envpools_own_and_steps_the_same_environments():
    """Stepping `env.pool` directly (the pipeline bench's envpool alone) runs the environments `env.step` runs."""
    actions = np.random.default_rng(4).integers(0, 2, (30, 3))
    wrapped, direct = make_envpool_env("CartPole-v1", 3, seed=5), make_envpool_env("CartPole-v1", 3, seed=5)
    direct.reset()
    for action, timestep in zip(actions, run(wrapped, actions)[0][1:], strict=True):
        observation, reward, terminated, truncated, _ = direct.pool.step(action.astype(np.int32))
        np.testing.assert_array_equal(timestep.observation, observation)
        np.testing.assert_array_equal(timestep.last(), terminated | truncated)
    assert terminated.dtype == bool and wrapped.pool is not direct.pool


def test_environment_i_is_seeded_seed_plus_i():
    """Why pools for different actors need seeds num_envs apart."""
    pair = make_envpool_env("CartPole-v1", 2, seed=0).reset().observation
    single = make_envpool_env("CartPole-v1", 1, seed=1).reset().observation
    np.testing.assert_array_equal(pair[1], single[0])
    assert not np.array_equal(pair[0], pair[1])


def test_bad_actions_and_misuse_raise():
    env = make_envpool_env("CartPole-v1", 2, seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, np.int32))
    env.reset()
    for action in (np.zeros(3, np.int32), np.array([0, 2]), np.array([-1, 0]), np.array([0.0, 1.0])):
        with pytest.raises(ValueError):
            env.step(action)
    assert env.step(np.array([0, 1], np.int64)).step_type.shape == (2,)
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.reset()


def test_mujoco_specs_float_actions_and_float32_observations():
    env = make_envpool_env("HalfCheetah-v4", num_envs=2, seed=0)
    assert env.frames_per_step == 1 and env.max_episode_steps == 1000  # frame_skip 5 is physics steps, not frames.
    observation_spec, action_spec = env.observation_spec(), env.action_spec()
    assert observation_spec.shape == (17,) and observation_spec.dtype == np.float32  # envpool's float64, converted.
    assert observation_spec.minimum == -np.inf and observation_spec.maximum == np.inf
    assert type(action_spec) is specs.BoundedArray and action_spec.shape == (6,) and action_spec.dtype == np.float32
    assert action_spec.minimum == -1 and action_spec.maximum == 1
    actions = np.random.default_rng(0).uniform(-1, 1, (20, 2, 6)).astype(np.float32)
    timesteps, returns, lengths = run(env, actions)
    check_stream(timesteps, returns, lengths)
    for timestep in timesteps:
        assert timestep.observation.shape == (2, 17) and timestep.observation.dtype == np.float32
        observation_spec.validate(timestep.observation[0])
    again, _, _ = run(make_envpool_env("HalfCheetah-v4", num_envs=2, seed=0), actions.astype(np.float64))
    for a, b in zip(timesteps, again, strict=True):  # Same seed and actions (float32 or float64): same stream.
        jax.tree.map(np.testing.assert_array_equal, a, b)
    single = make_envpool_env("HalfCheetah-v4", num_envs=1, seed=1).reset().observation
    np.testing.assert_array_equal(timesteps[0].observation[1], single[0])  # Environment i is seeded seed + i.


def test_mujoco_time_limit_truncates_with_discount_one():
    env = make_envpool_env("HalfCheetah-v4", num_envs=2, seed=0, max_episode_steps=5)
    timesteps, returns, lengths = run(env, np.zeros((12, 2, 6), np.float32))
    step_type, reward, discount = check_stream(timesteps, returns, lengths)
    episode = [FIRST, MID, MID, MID, MID, LAST]
    np.testing.assert_array_equal(step_type[:, 0], episode + episode + [FIRST])
    assert (step_type == step_type[:, :1]).all() and (discount == 1).all()  # HalfCheetah never terminates.
    np.testing.assert_array_equal(lengths[5], [5, 5])


def test_hopper_falling_terminates_with_discount_zero_except_on_the_last_allowed_step():
    """Pushing every joint falls at step 22; with a limit of 22 it reads as truncation (module docstring)."""
    actions = np.ones((25, 1, 3), np.float32)
    timesteps, returns, lengths = run(make_envpool_env("Hopper-v4", 1, seed=0), actions)
    step_type, _, discount = check_stream(timesteps, returns, lengths)
    assert step_type[22, 0] == LAST and discount[22, 0] == 0 and (step_type[1:22, 0] == MID).all()
    assert step_type[23, 0] == FIRST
    timesteps, _, _ = run(make_envpool_env("Hopper-v4", 1, seed=0, max_episode_steps=22), actions)
    assert timesteps[22].step_type[0] == LAST and timesteps[22].discount[0] == 1


def test_mujoco_bad_actions_raise_value_errors():
    env = make_envpool_env("HalfCheetah-v4", 2, seed=0)
    env.reset()
    bad = (np.zeros((2, 5)), np.zeros((3, 6)), np.zeros(12), np.zeros((2, 6), np.int32), np.full((2, 6), np.nan))
    for action in (*bad, np.full((2, 6), np.inf)):
        with pytest.raises(ValueError, match="(?i)actions"):
            env.step(action)
    assert env.step(np.full((2, 6), 3.0)).step_type.shape == (2,)  # Bounds are the caller's to clip, not checked.
