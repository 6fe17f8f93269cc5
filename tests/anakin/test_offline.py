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
from tests.helpers import last_json_line, run_module
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


@pytest.mark.parametrize("agent", ["iql", "td3_bc"])
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


@pytest.mark.default_compile  # Two programs compute bitwise alike as XLA builds them by default, not at -O0.
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
        ("iql", "gymnax:Pendulum-v1", "", "offline.dataset", "learns from a dataset, and none is given"),
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
