"""Playing a trained agent back from its workdir (`podracer.experiment.trained`, `watch`) and drawing it."""

import imageio.v3 as imageio
import jax
import numpy as np
import pytest

import podracer
from podracer.envs import frames
from podracer.experiment import trained, watch
from tests.helpers import load_config

EPISODES = 6


@pytest.fixture(scope="module")
def catch_run(tmp_path_factory):
    """A short Catch run over the session's 2 devices whose last record holds an evaluation of its final checkpoint."""
    workdir = str(tmp_path_factory.mktemp("catch"))
    fields = {"total_steps": 8192 * 3, "evaluation.every_steps": 10**9, "evaluation.episodes": EPISODES}
    return workdir, podracer.train(load_config("anakin_catch", fields), workdir=workdir)


def test_the_workdirs_agent_acts_as_the_trained_one(catch_run):
    workdir, result = catch_run
    agent = trained.load(workdir)
    assert agent.step == result.steps and agent.config.env.name == "catch"
    for mine, its in zip(jax.tree.leaves(agent.acting_params), jax.tree.leaves(result.acting_params), strict=True):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(its))


def test_played_episodes_are_the_runs_own_evaluation_and_the_video_has_a_frame_per_step(catch_run, tmp_path):
    workdir, result = catch_run
    played = watch.play(trained.load(workdir), EPISODES, video_episodes=2)
    record = result.history[-1]
    assert played.ended.all() and played.returns.mean() == pytest.approx(record["eval_mean_return"], abs=1e-6)
    assert played.lengths.mean() == record["eval_mean_length"]
    assert len(played.frames) == sum(played.lengths[:2] + 1)  # Each drawn episode's first observation and steps.
    for name in ("catch.mp4", "catch.gif"):
        watch.write_video(played.frames, str(tmp_path / name), fps=10)
        video = imageio.imread(tmp_path / name)
        assert video.shape[0] == len(played.frames) and video.shape[-1] == 3, (name, video.shape)


def test_a_workdir_without_a_checkpoint_is_named(tmp_path):
    with pytest.raises(podracer.ConfigError, match="workdir"):
        trained.load(str(tmp_path))


def test_observations_are_drawn_when_they_are_images():
    atari = np.stack([np.full((84, 84), value, np.uint8) for value in (0, 50, 100, 150)])
    np.testing.assert_array_equal(frames.image_of(atari), np.full((84, 84, 3), 150, np.uint8))  # The newest frame.
    layers = np.zeros((10, 10, 6), bool)
    layers[2, 3, 4] = True
    image = frames.image_of(layers)
    np.testing.assert_array_equal(image[2, 3], frames.PALETTE[4])
    assert image.sum() == frames.PALETTE[4].sum()
    board = np.zeros((10, 5), np.float32)
    board[9, 2] = 1.0
    drawn = frames.frame(None, None, board)
    assert drawn.shape == (260, 130, 3) and drawn[9 * 26, 2 * 26].tolist() == [255, 255, 255]  # Scaled by 26.
    with pytest.raises(frames.CannotRender, match="not an image"):
        frames.image_of(np.zeros(4, np.float32))
