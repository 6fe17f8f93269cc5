"""Playing a trained agent back from its workdir (`podracer.experiment.trained`, `watch`) and drawing it."""

import json
import os

import imageio.v3 as imageio
import jax
import numpy as np
import pytest

import podracer
from podracer import cli
from podracer.envs import frames
from podracer.experiment import trained, watch
from tests.experiment.conftest import EPISODES
from tests.helpers import load_config


@pytest.mark.slow  # Uses the trained run (conftest.catch_run).
def test_the_workdirs_agent_acts_as_the_trained_one(catch_run):
    workdir, result = catch_run
    agent = trained.load(workdir)
    assert agent.step == result.steps and agent.config.env.name == "catch"
    for mine, its in zip(jax.tree.leaves(agent.acting_params), jax.tree.leaves(result.acting_params), strict=True):
        np.testing.assert_array_equal(np.asarray(mine), np.asarray(its))


@pytest.mark.slow  # Uses the trained run (conftest.catch_run).
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


@pytest.mark.slow  # Uses the trained run (conftest.catch_run).
def test_podracer_evaluate_prints_the_returns_and_writes_the_video_with_the_returns_beside_it(
    catch_run, tmp_path, capsys
):
    workdir, result = catch_run
    video = tmp_path / "catch.gif"
    assert (
        cli.run(["evaluate", workdir, "--episodes", str(EPISODES), "--video", str(video), "--video-episodes", "2"]) == 0
    )
    out = capsys.readouterr().out
    played = watch.play(trained.load(workdir), EPISODES)
    assert f"returns: {' '.join(f'{value:g}' for value in played.returns)}" in out
    assert f"mean return {result.history[-1]['eval_mean_return']:.6g}" in out
    beside = json.loads((tmp_path / "catch.gif.returns.json").read_text())
    assert beside["returns"] == played.returns.tolist() and beside["drawn"] == 2
    assert imageio.imread(video).shape[0] == sum(played.lengths[:2] + 1)


@pytest.mark.slow  # Uses the trained run (conftest.catch_run).
@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (["--episodes", "0"], ["--episodes"]),
        (["--video", "film.avi"], ["--video", ".mp4 or .gif"]),
        (["--video", "/no/such/folder/film.mp4"], ["--video", "folder does not exist"]),
        (["--checkpoint", "999"], ["--checkpoint", "no checkpoint 999"]),
        (["--member", "1"], ["--member", "not a population"]),
    ],
)
def test_podracer_evaluate_refuses_bad_arguments_with_exit_2_and_writes_nothing(catch_run, capsys, arguments, words):
    workdir, _ = catch_run
    assert cli.run(["evaluate", workdir, *arguments]) == 2
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert message.startswith("podracer evaluate: error:") and all(word in message for word in words), message
    assert not os.path.exists("film.avi") and "Traceback" not in message


def test_podracer_evaluate_names_a_workdir_without_a_checkpoint(tmp_path, capsys):
    assert cli.run(["evaluate", str(tmp_path)]) == 2
    assert "holds no checkpoint" in capsys.readouterr().err
    assert cli.run(["evaluate", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err


@pytest.mark.slow  # A Sebulba run with its actor threads and a final evaluation, about 10 s.
def test_a_sebulba_runs_agent_plays_its_own_evaluation_episodes(tmp_path):
    fields = {"total_steps": 2048, "evaluation.every_steps": 10**9, "evaluation.episodes": 3}
    result = podracer.train(load_config("sebulba_cartpole_ppo", fields), workdir=str(tmp_path))
    played = watch.play(trained.load(str(tmp_path)), 3)
    assert played.returns.mean() == pytest.approx(result.history[-1]["eval_mean_return"], abs=1e-6)
    assert played.lengths.tolist() == played.returns.tolist()  # CartPole pays 1 a step.


@pytest.mark.slow  # Uses the trained run (conftest.catch_run).
def test_podracer_evaluate_sends_its_video_to_the_runs_wandb_run(catch_run, tmp_path, monkeypatch, capsys):
    """Where the run's config names a wandb project, the video goes to its run, at the checkpoint's step."""
    workdir, result = catch_run
    sent = []

    class FakeLogger:  # What `wandb_logger.start` returns on process 0 when a project is set.
        run = type("Run", (), {"id": "abc", "step": 7})()

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            sent.append("finished")

        def log_video(self, path, step):
            sent.append((path, step))

    monkeypatch.setattr(
        "podracer.run.wandb_logger.start", lambda config, path: FakeLogger() if path == workdir else None
    )
    video = str(tmp_path / "catch.gif")
    assert cli.run(["evaluate", workdir, "--episodes", "2", "--video", video]) == 0
    assert sent == [(video, result.steps), "finished"] and "sent" in capsys.readouterr().out
