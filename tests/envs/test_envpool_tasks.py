"""envpool's tasks and options: task ids, Atari's sticky actions, and the options refused before `envpool.make`."""

import pytest

from podracer.envs import make_envpool_env
from podracer.envs.host_suites.envpool_tasks import ATARI_DEFAULTS, is_atari_task, is_envpool_task


def test_sticky_actions_set_repeat_action_probability():
    def probability(**kwargs):
        env = make_envpool_env("Pong-v5", 1, seed=0, **kwargs)
        env.close()
        return env._pool.spec.config.repeat_action_probability

    assert probability() == 0.0
    assert probability(sticky_actions=True) == pytest.approx(0.25)
    assert probability(repeat_action_probability=0.1) == pytest.approx(0.1)  # envpool's own option passes through.
    assert ATARI_DEFAULTS["sticky_actions"] is False
    with pytest.raises(ValueError, match="not both"):
        make_envpool_env("Pong-v5", 1, seed=0, sticky_actions=True, repeat_action_probability=0.25)
    with pytest.raises(ValueError, match="Atari tasks only"):
        make_envpool_env("CartPole-v1", 1, seed=0, sticky_actions=True)


def test_reward_clip_is_not_an_environment_option():
    assert "reward_clip" not in ATARI_DEFAULTS
    for name in ("CartPole-v1", "Pong-v5"):
        with pytest.raises(ValueError, match="config.agent.reward_clip"):
            make_envpool_env(name, 1, seed=0, reward_clip=True)


def test_task_names():
    assert is_envpool_task("CartPole-v1") and is_envpool_task("Pong-v5")
    assert not is_envpool_task("cartpole") and not is_envpool_task("Pong-v4")
    assert is_atari_task("Breakout-v5") and not is_atari_task("CartPole-v1")
    assert not is_atari_task("D1Basic-v1")  # ViZDoom also has frame_skip and stack_num.


def test_bad_names_and_options_raise_value_errors():
    with pytest.raises(ValueError, match=r"Unknown envpool task 'Pong-v4'.*Pong-v5.*list_all_envs"):
        make_envpool_env("Pong-v4", 2, seed=0)
    with pytest.raises(ValueError, match="unexpected keyword argument 'foo'"):
        make_envpool_env("CartPole-v1", 2, seed=0, foo=1)
    with pytest.raises(ValueError, match="frame_skip"):
        make_envpool_env("CartPole-v1", 2, seed=0, frame_skip=4)  # An Atari option elsewhere.
    with pytest.raises(ValueError, match="batch_size"):
        make_envpool_env("CartPole-v1", 2, seed=0, batch_size=1)
    with pytest.raises(ValueError, match="num_envs"):
        make_envpool_env("CartPole-v1", 0, seed=0)
