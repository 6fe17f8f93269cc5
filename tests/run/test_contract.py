"""The run contract's helpers: the mean return over a run's last episodes, read back from its log records."""

import math

import podracer


def record(episodes: int, mean: float) -> dict:
    return {"episodes": episodes, "mean_episode_return": mean if episodes else math.nan}


def test_recent_return_weighs_whole_windows_back_to_enough_episodes():
    history = [record(50, 10.0), record(40, 500.0), record(0, math.nan), record(60, 480.0), record(3, 100.0)]
    # The last 100 episodes or more: 3 at 100, 60 at 480, none, 40 at 500 (103 episodes); the first window is left.
    assert podracer.recent_return(history) == (3 * 100.0 + 60 * 480.0 + 40 * 500.0) / 103
    assert podracer.recent_return(history, episodes=3) == 100.0  # The last window alone holds 3.
    assert podracer.recent_return(history, episodes=1000) == (50 * 10 + 40 * 500 + 60 * 480 + 3 * 100) / 153
    assert math.isnan(podracer.recent_return([record(0, math.nan)]))
