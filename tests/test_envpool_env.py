"""Host environments on envpool: dm_env episode boundaries, statistics, Atari options, seeding and errors."""

import itertools

import jax
import numpy as np
import pytest

from podracer.envs import FIRST, LAST, MID, make_host_env
from podracer.envs import timestep as ts
from podracer.envs.envpool_env import (
    ATARI_DEFAULTS,
    dm_timestep,
    is_atari_task,
    is_envpool_task,
)

THETA_LIMIT = 12 * 2 * np.pi / 360  # CartPole-v1 terminates beyond these.
X_LIMIT = 2.4


def _run(env, actions):
    """Resets and steps `env` with `actions` [T, B]; returns the T + 1 timesteps and statistics after each."""
    timesteps, returns, lengths = [env.reset()], [env.episode_return.copy()], [env.episode_length.copy()]
    for action in actions:
        timesteps.append(env.step(action))
        returns.append(env.episode_return.copy())
        lengths.append(env.episode_length.copy())
    return timesteps, np.stack(returns), np.stack(lengths)


def _check_stream(timesteps, returns, lengths, raw_rewards=None):
    """dm_env's contract on a batch stream, and statistics recomputed independently from it.

    `raw_rewards` [T + 1, B] are the unclipped rewards when the agent's are clipped.
    """
    step_type = np.stack([t.step_type for t in timesteps])
    reward = np.stack([t.reward for t in timesteps])
    discount = np.stack([t.discount for t in timesteps])
    raw = reward if raw_rewards is None else raw_rewards
    assert step_type.dtype == np.int32 and reward.dtype == np.float32 and discount.dtype == np.float32
    assert (step_type[0] == FIRST).all()
    assert ((step_type[1:] == FIRST) == (step_type[:-1] == LAST)).all()  # FIRST exactly after LAST.
    first = step_type == FIRST
    assert (reward[first] == 0).all() and (discount[first] == 1).all()
    assert (discount[step_type == MID] == 1).all()
    for b in range(step_type.shape[1]):
        episode_return, episode_length = 0.0, 0
        for t in range(step_type.shape[0]):
            if step_type[t, b] == FIRST:
                episode_return, episode_length = 0.0, 0
            else:
                episode_return += float(raw[t, b])
                episode_length += 1
            assert returns[t, b] == pytest.approx(episode_return)
            assert lengths[t, b] == episode_length
    return step_type, reward, discount


def test_cartpole_time_limit_truncates_with_discount_one():
    env = make_host_env("CartPole-v1", num_envs=3, seed=0, max_episode_steps=5)
    assert env.frames_per_step == 1 and env.max_episode_steps == 5
    actions = np.tile(np.array([[0], [1]]), (7, 3))  # Alternating pushes: the pole stays up for 5 steps.
    timesteps, returns, lengths = _run(env, actions)
    step_type, reward, discount = _check_stream(timesteps, returns, lengths)
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
    env = make_host_env("CartPole-v1", num_envs=4, seed=1)
    assert env.max_episode_steps == 500
    actions = np.ones((40, 4), np.int32)  # Always push right: the pole falls within about ten steps.
    timesteps, returns, lengths = _run(env, actions)
    step_type, reward, discount = _check_stream(timesteps, returns, lengths)
    last = step_type == LAST
    assert last.sum(axis=0).min() >= 2
    assert (discount[last] == 0).all() and (reward[last] == 1).all()
    observation = np.stack([t.observation for t in timesteps])
    fallen = (np.abs(observation[..., 2]) > THETA_LIMIT) | (np.abs(observation[..., 0]) > X_LIMIT)
    np.testing.assert_array_equal(fallen, last)  # LAST carries the old episode's final (terminal) state.
    assert (np.abs(observation[step_type == FIRST]) <= 0.05).all()  # The new episode's initial state.
    np.testing.assert_array_equal(lengths[last], returns[last])  # Reward 1 per step.


def test_cartpole_random_stream_and_observations_stay_valid():
    env = make_host_env("CartPole-v1", num_envs=5, seed=2, max_episode_steps=30)
    actions = np.random.default_rng(0).integers(0, 2, (120, 5))
    timesteps, returns, lengths = _run(env, actions)
    step_type, _, discount = _check_stream(timesteps, returns, lengths)
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
    timesteps, _, _ = _run(make_host_env("CartPole-v1", 1, seed=1, max_episode_steps=100), actions)
    end = next(t for t, x in enumerate(timesteps) if x.step_type[0] == LAST)
    assert timesteps[end].discount[0] == 0
    timesteps, _, _ = _run(make_host_env("CartPole-v1", 1, seed=1, max_episode_steps=end), actions)
    assert timesteps[end].step_type[0] == LAST and timesteps[end].discount[0] == 1


def test_atari_game_over_on_last_allowed_step_is_termination():
    """envpool flags it truncated; info["terminated"] restores termination, which wins."""
    actions = np.random.default_rng(0).integers(0, 4, (1000, 1))
    env = make_host_env("Breakout-v5", 1, seed=6)
    env.reset()
    for end, action in enumerate(actions, 1):
        timestep = env.step(action)
        if timestep.step_type[0] == LAST:
            break
    assert timestep.discount[0] == 0 and end < 1000  # Game over, at step `end`.
    for limit, discount in ((end, 0.0), (end - 1, 1.0)):
        timesteps, _, _ = _run(make_host_env("Breakout-v5", 1, seed=6, max_episode_steps=limit), actions[:limit + 1])
        assert timesteps[limit].step_type[0] == LAST and timesteps[limit].discount[0] == discount
        assert timesteps[limit + 1].step_type[0] == FIRST


def test_pong_observations_spec_and_defaults():
    env = make_host_env("Pong-v5", num_envs=2, seed=0)
    spec = env.observation_spec()
    assert spec.shape == (4, 84, 84) and spec.dtype == np.uint8
    assert env.action_spec().num_values == 6 and env.action_spec().dtype == np.int32
    assert env.frames_per_step == 4 and env.reward_clip and env.max_episode_steps == 27000
    config = env._pool.spec.config
    assert (config.stack_num, config.frame_skip, config.noop_max, config.img_height, config.img_width) == (4, 4, 30, 84, 84)
    assert config.gray_scale and not config.episodic_life and not config.full_action_space
    assert config.repeat_action_probability == 0.0 and not config.reward_clip  # Clipping is ours, not envpool's.
    timesteps, returns, lengths = _run(env, np.random.default_rng(0).integers(0, 6, (30, 2)))
    _check_stream(timesteps, returns, lengths)
    for timestep in timesteps:
        assert timestep.observation.shape == (2, 4, 84, 84) and timestep.observation.dtype == np.uint8
        spec.validate(timestep.observation[1])


def test_sticky_actions_set_repeat_action_probability():
    def probability(**kwargs):
        env = make_host_env("Pong-v5", 1, seed=0, **kwargs)
        env.close()
        return env._pool.spec.config.repeat_action_probability

    assert probability() == 0.0
    assert probability(sticky_actions=True) == pytest.approx(0.25)
    assert probability(repeat_action_probability=0.1) == pytest.approx(0.1)  # envpool's own option passes through.
    assert ATARI_DEFAULTS["sticky_actions"] is False
    with pytest.raises(ValueError, match="not both"):
        make_host_env("Pong-v5", 1, seed=0, sticky_actions=True, repeat_action_probability=0.25)
    with pytest.raises(ValueError, match="Atari tasks only"):
        make_host_env("CartPole-v1", 1, seed=0, sticky_actions=True)


def test_reward_clip_on_space_invaders_keeps_statistics_unclipped():
    """Space Invaders pays 5 to 30 points an alien, so random play soon earns rewards above 1."""
    actions = np.random.default_rng(0).integers(0, 6, (130, 1))
    clipped, clipped_returns, clipped_lengths = _run(make_host_env("SpaceInvaders-v5", 1, seed=2), actions)
    raw, raw_returns, raw_lengths = _run(make_host_env("SpaceInvaders-v5", 1, seed=2, reward_clip=False), actions)
    raw_reward = np.stack([t.reward for t in raw])
    clipped_reward = np.stack([t.reward for t in clipped])
    assert raw_reward.max() > 1
    np.testing.assert_array_equal(clipped_reward, np.clip(raw_reward, -1, 1))
    _check_stream(raw, raw_returns, raw_lengths)
    _check_stream(clipped, clipped_returns, clipped_lengths, raw_rewards=raw_reward)  # Statistics unclipped.
    np.testing.assert_array_equal(clipped_returns, raw_returns)
    assert clipped_returns.max() > 1


def test_reward_clip_on_cartpole_is_ours():
    env = make_host_env("CartPole-v1", 1, seed=0, reward_clip=True)
    assert env.reward_clip and env.frames_per_step == 1


@pytest.mark.parametrize("name, num_actions", [("CartPole-v1", 2), ("Pong-v5", 6)])
def test_same_seed_same_actions_same_observations(name, num_actions):
    actions = np.random.default_rng(3).integers(0, num_actions, (40, 2))
    first, _, _ = _run(make_host_env(name, 2, seed=7), actions)
    second, _, _ = _run(make_host_env(name, 2, seed=7, num_threads=1), actions)
    for a, b in zip(first, second):
        jax.tree.map(np.testing.assert_array_equal, a, b)


def test_environment_i_is_seeded_seed_plus_i():
    """Why pools for different actors need seeds num_envs apart."""
    pair = make_host_env("CartPole-v1", 2, seed=0).reset().observation
    single = make_host_env("CartPole-v1", 1, seed=1).reset().observation
    np.testing.assert_array_equal(pair[1], single[0])
    assert not np.array_equal(pair[0], pair[1])


def test_dm_timestep_follows_timestep_transition():
    """The numpy rule equals `timestep.transition` (and `restart` where first)."""
    combos = np.array(list(itertools.product([False, True], repeat=3)))
    terminated, truncated, first = combos.T
    reward = np.arange(len(combos), dtype=np.float32) + 1
    host = dm_timestep(np.zeros(len(combos)), reward, terminated, truncated, first)
    for i in range(len(combos)):
        if first[i]:
            expected = ts.restart(0.0)
        else:
            expected = ts.transition(0.0, reward[i], terminated[i], truncated[i])
        assert host.step_type[i] == int(expected.step_type)
        assert host.reward[i] == float(expected.reward)
        assert host.discount[i] == float(expected.discount)


def test_task_names():
    assert is_envpool_task("CartPole-v1") and is_envpool_task("Pong-v5")
    assert not is_envpool_task("cartpole") and not is_envpool_task("Pong-v4")
    assert is_atari_task("Breakout-v5") and not is_atari_task("CartPole-v1")
    assert not is_atari_task("D1Basic-v1")  # ViZDoom also has frame_skip and stack_num.


def test_bad_names_and_options_raise_value_errors():
    with pytest.raises(ValueError, match=r"Unknown envpool task 'Pong-v4'.*Pong-v5.*list_all_envs"):
        make_host_env("Pong-v4", 2, seed=0)
    with pytest.raises(ValueError, match="unexpected keyword argument 'foo'"):
        make_host_env("CartPole-v1", 2, seed=0, foo=1)
    with pytest.raises(ValueError, match="frame_skip"):
        make_host_env("CartPole-v1", 2, seed=0, frame_skip=4)  # An Atari option elsewhere.
    with pytest.raises(ValueError, match="batch_size"):
        make_host_env("CartPole-v1", 2, seed=0, batch_size=1)
    with pytest.raises(ValueError, match="num_envs"):
        make_host_env("CartPole-v1", 0, seed=0)


def test_bad_actions_and_misuse_raise():
    env = make_host_env("CartPole-v1", 2, seed=0)
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
