"""`EpisodeRecorder` cuts a batch's auto-reset steps into whole episodes, termination and truncation apart."""

import numpy as np
import pytest

from podracer.envs.timestep import FIRST, LAST, MID, TimeStep
from podracer.offline.episode_data import Episode
from podracer.offline.recorder import EpisodeRecorder


def batch(step_types, rewards, discounts, observations) -> TimeStep:
    return TimeStep(
        step_type=np.asarray(step_types, np.int32),
        reward=np.asarray(rewards, np.float32),
        discount=np.asarray(discounts, np.float32),
        observation={"x": np.asarray(observations, np.float32)},
    )


def test_each_environment_episode_is_cut_at_its_last_step_and_the_reset_step_is_left_out():
    """Two environments: the first ends by termination after 2 steps, resets (its action ignored), and ends by
    truncation after 1 more; the second runs on. The recorded episodes hold exactly what happened."""
    recorder = EpisodeRecorder(2)
    recorder.start(batch([FIRST, FIRST], [0, 0], [1, 1], [10, 20]))
    steps = [  # (actions, step types, rewards, discounts, observations)
        ([1, 2], [MID, MID], [1.0, 2.0], [1, 1], [11, 21]),
        ([3, 4], [LAST, MID], [5.0, 2.0], [0, 1], [12, 22]),  # Env 0 terminates.
        ([9, 5], [FIRST, MID], [0.0, 2.0], [1, 1], [30, 23]),  # Env 0 resets: action 9 is ignored.
        ([6, 7], [LAST, MID], [7.0, 2.0], [1, 1], [31, 24]),  # Env 0 is truncated.
    ]
    ended = []
    for actions, *rest in steps:
        ended += recorder.step(np.asarray(actions, np.int32), batch(*rest))
    assert len(ended) == 2
    first, second = ended
    np.testing.assert_array_equal(first.observations["x"], [10, 11, 12])
    np.testing.assert_array_equal(first.actions, [1, 3])
    np.testing.assert_array_equal(first.rewards, [1.0, 5.0])
    np.testing.assert_array_equal(first.terminations, [False, True])
    np.testing.assert_array_equal(first.truncations, [False, False])
    np.testing.assert_array_equal(second.observations["x"], [30, 31])
    np.testing.assert_array_equal(second.actions, [6])
    np.testing.assert_array_equal(second.terminations, [False])
    np.testing.assert_array_equal(second.truncations, [True])
    assert second.episode_return == 7.0


def test_an_episode_of_mismatched_lengths_is_refused():
    with pytest.raises(ValueError, match="needs 3 observations"):
        Episode(np.zeros((2, 1)), np.zeros(2), np.zeros(2), np.zeros(2, bool), np.zeros(2, bool))


def test_an_environment_joined_mid_episode_is_recorded_from_its_next_episode():
    """A resumed run's environments are mid-episode: their first whole episode is the next one."""
    recorder = EpisodeRecorder(2)
    recorder.start(batch([MID, FIRST], [0, 0], [1, 1], [10, 20]))
    ended = recorder.step(np.asarray([1, 2], np.int32), batch([LAST, LAST], [1.0, 2.0], [0, 0], [11, 21]))
    assert [episode.observations["x"].tolist() for episode in ended] == [[20, 21]]
    recorder.step(np.asarray([0, 0], np.int32), batch([FIRST, FIRST], [0, 0], [1, 1], [30, 40]))
    ended = recorder.step(np.asarray([3, 4], np.int32), batch([LAST, LAST], [1.0, 1.0], [1, 1], [31, 41]))
    assert [episode.observations["x"].tolist() for episode in ended] == [[30, 31], [40, 41]]
