"""Sebulba's dataset logger (`logger.dataset`): each actor thread records its rollouts, written whole at the end."""

import os

import pytest

import podracer
from podracer.offline import minari_files
from tests.helpers import small_sebulba_cartpole


@pytest.mark.slow  # Two Sebulba runs of 10 updates.
def test_a_run_records_its_actor_threads_episodes_as_the_episodes_it_reports(tmp_path):
    """10 updates of 2 actor threads x 6 CartPole environments: the dataset holds exactly the episodes that ended in
    the run's records; a run stopped before its end leaves no dataset."""
    path = str(tmp_path / "cartpole-replay-v0")
    result = podracer.train(small_sebulba_cartpole(total_steps=8 * 6 * 2 * 10, **{"logger.dataset": path}))
    episodes, observations, actions, metadata = minari_files.read(path)
    assert len(episodes) == sum(record["episodes"] for record in result.history) == metadata["episodes"] > 0
    assert str(observations.shape) == "(4,)" and actions.num_values == 2
    for episode in episodes:  # CartPole pays 1 a step; a fallen pole terminates.
        assert episode.rewards.sum() == episode.steps and episode.terminations[-1]
    assert metadata["recorded"] == "the run's training experience" and metadata["from_step"] == 0

    def stop(event):
        raise KeyboardInterrupt

    stopped = small_sebulba_cartpole(total_steps=8 * 6 * 2 * 10, **{"logger.dataset": path + "2"})
    with pytest.raises(KeyboardInterrupt):
        podracer.train(stopped, callbacks=[stop])
    assert sorted(os.listdir(tmp_path)) == ["cartpole-replay-v0"]
