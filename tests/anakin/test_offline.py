"""Anakin trains from a dataset: the offline agents learn, resume bitwise, run as populations, and bad input is refused.

Datasets are recorded here, from scripted or random play of podracer's own
environments (`tests.offline.datasets.record`), and from a trained run by
`podracer collect` in tests/cli/test_collect.py.
"""

import os
import shutil

import jax
import numpy as np
import pytest

import podracer
from podracer import defaults
from podracer.config.errors import ConfigError
from podracer.offline import minari_files
from tests.helpers import last_json_line, load_config, run_module
from tests.offline.datasets import record


def cartpole_expert(observation: np.ndarray, rng) -> np.ndarray:
    """Push the way the pole is falling: theta + 0.5 theta' > 0 pushes right. Scores 500, the most CartPole gives."""
    del rng
    return (observation[:, 2] + 0.5 * observation[:, 3] > 0).astype(np.int32)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("datasets")
    return {
        "cartpole-expert": record("cartpole", 2_000, str(folder / "cartpole-expert-v0"), cartpole_expert),
        "pendulum-random": record("gymnax:Pendulum-v1", 1_600, str(folder / "pendulum-random-v0")),
        "folder": folder,
    }


def offline_config(agent: str, env: str, dataset: str, **fields):
    config = defaults(agent)
    config.env.name = env
    config.offline.dataset = dataset
    config.network.hidden_sizes = (32, 32)
    for field, value in fields.items():
        node, _, name = field.rpartition(".")
        (config if not node else config[node])[name] = value
    return config


@pytest.mark.slow  # 2,000 gradient steps and 100 evaluation episodes.
@pytest.mark.learning("evaluation, 100 episodes", at_least=400, random=22)
def test_behaviour_cloning_of_a_scripted_expert_plays_cartpole_like_it(datasets, learning):
    """2,000 gradient steps of discrete BC (cross-entropy) on 2,000 transitions of a controller that scores 500:
    the greedy policy's 100 evaluation episodes score as the controller does. Random play scores 22."""
    config = offline_config(
        "bc", "cartpole", str(datasets["folder"] / "cartpole-expert-v0"), total_steps=2_000, seed=learning.seed
    )
    config.evaluation.every_steps, config.evaluation.episodes = 2_000, 100
    config.optimizer.learning_rate = 1e-3
    result = podracer.train(config)
    assert result.history[-1]["accuracy"] > 0.9
    learning.check(podracer.recent_return(result.history, evaluated=True))


@pytest.mark.slow  # 4,000 gradient steps and 100 evaluation episodes.
@pytest.mark.learning("evaluation, 100 episodes", at_least=400, random=22)
def test_cql_learns_cartpole_from_an_expert_alone_where_its_regulariser_is_what_holds_it(datasets, learning):
    """4,000 gradient steps of discrete CQL (alpha 1, the target network moved 0.005 of the way each step) on the
    expert's 2,000 transitions: the greedy policy scores as the expert does. The dataset never shows what the
    other action leads to, and without the regulariser (alpha 0, offline double DQN) its Q-values there go
    unchecked: seeds 0-4 then score 184, 113, 64, 79 and 61, so the test fails where the regulariser does not
    act."""
    config = offline_config(
        "cql", "cartpole", str(datasets["folder"] / "cartpole-expert-v0"), total_steps=4_000, seed=learning.seed
    )
    config.network.hidden_sizes = (64, 64)
    config.agent.alpha = 1.0
    config.evaluation.every_steps, config.evaluation.episodes = 4_000, 100
    config.optimizer.learning_rate = 1e-3
    result = podracer.train(config)
    assert result.history[-1]["cql_regulariser"] > 0.0
    learning.check(podracer.recent_return(result.history, evaluated=True))


@pytest.mark.slow  # Four agents, each compiled twice (its resumed run's program is another process's in practice).
@pytest.mark.parametrize(
    "agent",
    [  # The checkpoint is the learner state's whole pytree, whatever the agent: CQL's resume stands for the others.
        pytest.param("iql", marks=pytest.mark.extended),
        pytest.param("td3_bc", marks=pytest.mark.extended),
        pytest.param("rebrac", marks=pytest.mark.extended),
        "cql",
    ],
)
def test_a_run_resumed_from_its_checkpoint_ends_bitwise_where_it_did(tmp_path, datasets, agent):
    """40 gradient steps, a checkpoint at 20: resumed from it in a copy of the workdir, the run ends on the same
    parameters, optimiser states and targets, bit for bit (the dataset is not in the checkpoint: it is read again)."""
    dataset = str(datasets["folder"] / "pendulum-random-v0")
    config = offline_config(agent, "gymnax:Pendulum-v1", dataset, total_steps=40, updates_per_dispatch=10)
    config.checkpoint.every_updates, config.checkpoint.every_minutes = 20, 0.0
    whole = podracer.train(config, workdir=str(tmp_path / "whole"))
    assert sorted(os.listdir(tmp_path / "whole" / "checkpoints")) == ["20", "40"]
    shutil.copytree(tmp_path / "whole", tmp_path / "split")
    shutil.rmtree(tmp_path / "split" / "checkpoints" / "40")
    resumed = podracer.train(config, workdir=str(tmp_path / "split"))
    for a, b in zip(jax.tree.leaves(whole.learner_state), jax.tree.leaves(resumed.learner_state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert [record["step"] for record in whole.history] == [10, 20, 30, 40]


@pytest.mark.slow  # 16-27 s: two members in one program and each alone, compiled in a child session.
@pytest.mark.extended
@pytest.mark.default_compile(llvm_optimised=False)  # Two programs compute bitwise alike with XLA's own emitters.
def test_a_population_of_seeds_is_one_program_whose_members_are_their_own_runs(datasets):
    """Two seeds of IQL in one program, one member at a time: each member's learner state is its run's, bitwise."""
    dataset = str(datasets["folder"] / "pendulum-random-v0")
    config = offline_config("iql", "gymnax:Pendulum-v1", dataset, total_steps=20, members_in_parallel=1)
    config.population.seed = (3, 4)
    population = podracer.train(config).learner_state
    for member, seed in enumerate((3, 4)):
        alone = podracer.train(offline_config("iql", "gymnax:Pendulum-v1", dataset, total_steps=20, seed=seed))
        for a, b in zip(jax.tree.leaves(population), jax.tree.leaves(alone.learner_state), strict=True):
            np.testing.assert_array_equal(np.asarray(a)[member], np.asarray(b))


def test_bad_datasets_and_agents_are_refused_before_anything_compiles(datasets, tmp_path):
    folder = datasets["folder"]
    cases = [  # (agent, env, dataset, the field named, words of the message)
        ("bc", "cartpole", str(tmp_path / "nothing"), "offline.dataset", f"{tmp_path / 'nothing'} is not a dataset"),
        ("bc", "catch", str(folder / "cartpole-expert-v0"), "offline.dataset", "observations are float32[4]"),
        (
            "bc",
            "gymnax:Pendulum-v1",
            str(folder / "cartpole-expert-v0"),
            "offline.dataset",
            "env.name's are float32[3]",
        ),
        ("ppo", "cartpole", str(folder / "cartpole-expert-v0"), "agent.name", "learns online"),
        ("td3_bc", "gymnax:Pendulum-v1", "", "offline.dataset", "learns from a dataset, and none is given"),
    ]
    for agent, env, dataset, field, words in cases:
        config = offline_config(agent, env, dataset, total_steps=10)
        with pytest.raises(ConfigError) as raised:
            podracer.train(config)
        assert raised.value.field == field and words in str(raised.value), str(raised.value)
    config = offline_config("bc", "cartpole", str(folder / "cartpole-expert-v0"), num_devices=2)
    config.agent.batch_size = 255
    with pytest.raises(ConfigError, match="255 transitions do not split evenly over 2 devices"):
        podracer.train(config)


@pytest.mark.slow  # One fresh process with 8 devices: BC and IQL compiled for 8 devices and for 1.
def test_eight_devices_sample_the_same_batches_and_make_the_same_updates_as_one():
    """The dataset split over 8 devices against one holding it all: the same batches bitwise, and 3 updates of BC
    and of IQL equal to float rounding (`tests/programs/offline_devices.py`)."""
    result = run_module("offline_devices", num_devices=8)
    assert result.returncode == 0, result.stderr
    summary = last_json_line(result.stdout)
    assert summary["bc"] < 1e-5 and summary["iql"] < 1e-5, summary


def test_a_run_records_its_training_experience_as_the_episodes_it_reports(tmp_path):
    """`logger.dataset`: the dataset holds exactly the episodes that ended in the run's records, over the session's
    2 devices, and trains BC; a run stopped before its end leaves no dataset."""
    path = str(tmp_path / "cartpole-replay-v0")
    config = load_config("anakin_cartpole_ppo", {"total_steps": 4_096, "logger.dataset": path, "num_envs": 8})
    result = podracer.train(config)
    episodes, *_, metadata = minari_files.read(path)
    assert len(episodes) == sum(record["episodes"] for record in result.history) == metadata["episodes"]
    assert metadata["mean_return"] == pytest.approx(podracer.recent_return(result.history, episodes=10**9))
    for episode in episodes:  # CartPole pays 1 a step; a fallen pole terminates before 500 steps.
        assert episode.rewards.sum() == episode.steps and episode.terminations[-1] and episode.steps < 500
    assert metadata["from_step"] == 0 and metadata["recorded"] == "the run's training experience"

    def stop(event):
        raise KeyboardInterrupt

    stopped = load_config("anakin_cartpole_ppo", {"total_steps": 4_096, "logger.dataset": path + "2", "num_envs": 8})
    with pytest.raises(KeyboardInterrupt):
        podracer.train(stopped, callbacks=[stop])
    assert sorted(os.listdir(tmp_path)) == ["cartpole-replay-v0"]


def test_recording_is_refused_where_it_cannot_work(datasets, tmp_path):
    existing = str(datasets["folder"] / "cartpole-expert-v0")
    cases = [
        ({"logger.dataset": existing}, "exists already"),
        ({"logger.dataset": str(tmp_path / "no" / "d")}, "folder does not exist"),
        ({"logger.dataset": str(tmp_path / "d"), "population.seed": (0, 1)}, "records one run of one process"),
    ]
    for fields, words in cases:
        with pytest.raises(ConfigError, match=words) as raised:
            podracer.validate_config(load_config("anakin_cartpole_ppo", fields))
        assert raised.value.field == "logger.dataset"
    config = offline_config("bc", "cartpole", existing)
    config.logger.dataset = str(tmp_path / "d")
    with pytest.raises(ConfigError, match="records the experience of an online run"):
        podracer.validate_config(config)
