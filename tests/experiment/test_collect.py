"""`podracer collect` records a trained run's policy as a dataset that Minari reads back, on both architectures."""

import json
import os

import minari
import numpy as np
import pytest

import podracer
from podracer.envs import make
from podracer.experiment import collect, trained
from podracer.offline import minari_files
from tests.helpers import run_cli, small_sebulba_cartpole


def read_back(path: str):
    episodes, observation_spec, action_spec, metadata = minari_files.read(path)
    dataset = minari.MinariDataset(os.path.join(path, "data"))
    assert dataset.total_episodes == len(episodes) == metadata["episodes"]
    assert dataset.total_steps == sum(episode.steps for episode in episodes) == metadata["steps"]
    return episodes, observation_spec, action_spec, metadata


def test_an_anakin_run_policy_is_recorded_as_whole_episodes_with_what_made_them(catch_run, tmp_path):
    """Catch's episodes are 9 steps, each ending by termination with a reward of +1 or -1 on its last step; a
    short run's agent acts greedily, and with epsilon 1 uniformly at random."""
    workdir, _ = catch_run
    agent = trained.load(workdir)
    greedy = collect.collect(agent, 90, str(tmp_path / "greedy"), collect.Policy(), num_envs=4)
    episodes, observation_spec, action_spec, metadata = read_back(str(tmp_path / "greedy"))
    assert 90 <= sum(episode.steps for episode in episodes) < 90 + 4 * 9
    env = make("catch")
    assert observation_spec.shape == env.observation_spec().shape and action_spec.num_values == 3
    for episode, recorded in zip(episodes, greedy, strict=True):
        assert episode.steps == 9 and episode.terminations[-1] and not episode.truncations.any()
        assert episode.rewards[-1] in (-1.0, 1.0) and not episode.rewards[:-1].any()
        np.testing.assert_array_equal(episode.actions, recorded.actions)
    assert metadata["checkpoint"] == agent.checkpoint and metadata["policy"]["epsilon"] == 0.0
    assert metadata["mean_return"] == pytest.approx(np.mean([episode.episode_return for episode in episodes]))
    assert metadata["config"]["env"]["name"] == "catch"

    collect.collect(agent, 900, str(tmp_path / "random"), collect.Policy(epsilon=1.0, seed=1), num_envs=8)
    random_episodes, *_, random_metadata = read_back(str(tmp_path / "random"))
    actions = np.concatenate([episode.actions for episode in random_episodes])
    assert np.all(np.abs(np.bincount(actions, minlength=3) / len(actions) - 1 / 3) < 0.05)
    assert random_metadata["mean_return"] < 0.0  # A random paddle misses most balls (about -0.6).


@pytest.mark.slow  # A Sebulba run of 3 updates, then its policy played on envpool.
def test_a_sebulba_run_policy_is_recorded_from_its_host_environments(tmp_path):
    podracer.train(small_sebulba_cartpole(), workdir=str(tmp_path / "run"))
    agent = trained.load(str(tmp_path / "run"))
    collect.collect(agent, 200, str(tmp_path / "data"), collect.Policy(greedy=False), num_envs=4)
    episodes, observation_spec, *_, metadata = read_back(str(tmp_path / "data"))
    assert observation_spec.shape == (4,) and metadata["architecture"] == "sebulba"
    for episode in episodes:  # CartPole pays 1 a step and ends by termination (a fallen pole) before 500.
        assert episode.rewards.sum() == episode.steps and episode.terminations[-1]


def test_the_command_writes_a_dataset_and_refuses_bad_arguments_with_exit_2(catch_run, tmp_path):
    workdir, _ = catch_run
    out = str(tmp_path / "catch-v0")
    result = run_cli("collect", workdir, "--steps", "45", "--out", out, "--sample", "--epsilon", "0.5")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"wrote {out}: ") and "sampled actions" in result.stdout
    metadata = json.load(open(os.path.join(out, "data", "metadata.json")))["podracer"]
    assert metadata["policy"] == {"greedy": False, "epsilon": 0.5, "seed": 0, "num_envs": 16}
    for args, words in [
        ([workdir, "--steps", "45", "--out", out], "exists already"),
        (
            [workdir, "--steps", "45", "--out", str(tmp_path / "b"), "--epsilon", "2"],
            "--epsilon 2 is not a probability",
        ),
        ([str(tmp_path / "none"), "--steps", "45", "--out", str(tmp_path / "c")], "none"),
        ([workdir, "--steps", "0", "--out", str(tmp_path / "d")], "--steps and --num-envs must be at least 1"),
    ]:
        refused = run_cli("collect", *args)
        assert refused.returncode == 2 and words in refused.stderr, (args, refused.stderr)
    assert sorted(os.listdir(tmp_path)) == ["catch-v0"]


@pytest.mark.slow  # A PQN run, then a fresh process.
def test_a_run_on_an_environment_that_makes_arrays_as_it_is_built_is_collected_from_a_fresh_process(tmp_path):
    """gymnax's MinAtar games make JAX arrays in their constructors: `podracer collect` in a fresh process, where
    the environment is first built to rebuild the agent, builds it outside any trace (once, inside one, it leaked
    a tracer)."""
    config = podracer.load_config(
        "configs/anakin_minatar_breakout_pqn.py",
        {"num_envs": 8, "unroll_length": 4, "total_steps": 32, "network.hidden_sizes": (8,)},
    )
    config.agent.num_minibatches = 1
    podracer.train(config, workdir=str(tmp_path / "run"))
    out = str(tmp_path / "data")
    result = run_cli("collect", str(tmp_path / "run"), "--steps", "20", "--out", out, "--num-envs", "2")
    assert result.returncode == 0, result.stderr
    assert read_back(out)[1].shape == (10, 10, 4)
