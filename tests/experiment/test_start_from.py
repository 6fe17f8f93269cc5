"""Offline-to-online: a run goes on, online and on either architecture, from an offline run's agent and dataset."""

import os
import shutil

import jax
import numpy as np
import pytest

import podracer
from podracer import defaults
from podracer.agents.learning import replay
from podracer.config.errors import ConfigError
from podracer.offline import minari_files
from tests.anakin.test_offline import offline_config
from tests.offline.datasets import record

PENDULUM = "gymnax:Pendulum-v1"
DATASET_TRANSITIONS = 1_600


@pytest.fixture(scope="module")
def offline_runs(tmp_path_factory) -> dict:
    """IQL and ReBRAC, 20 gradient steps each on random play of Pendulum, with their workdirs."""
    folder = tmp_path_factory.mktemp("offline")
    dataset = str(folder / "pendulum-random-v0")
    record(PENDULUM, DATASET_TRANSITIONS, dataset)
    runs = {"folder": folder, "dataset": dataset}
    for agent in ("iql", "rebrac"):
        runs[agent] = str(folder / agent)
        runs[agent + "-state"] = podracer.train(
            offline_config(agent, PENDULUM, dataset, total_steps=20), workdir=runs[agent]
        ).learner_state
    return runs


def online_config(agent: str, start_from: str, architecture: str = "anakin", **fields):
    """`agent` learning online on Pendulum, from `start_from`: 8 environments, 4 steps a rollout, one update."""
    config = defaults(agent, architecture=architecture)
    config.env.name = PENDULUM if architecture == "anakin" else "gymnasium:Pendulum-v1"
    config.network.hidden_sizes = (32, 32)
    config.offline.start_from = start_from
    config.unroll_length = 4
    envs = "num_envs" if architecture == "anakin" else "envs_per_thread"
    config[envs] = 8 if architecture == "anakin" else 4  # Sebulba: 2 actor threads.
    config.total_steps = 32
    if "buffer_size" in config.agent:  # An agent that learns online (the others are refused).
        config.agent.buffer_size = 8 * 400
        config.agent.min_replay_size = 8 * 300  # More than the dataset's 200 a row: the update only adds its rollout.
    for field, value in fields.items():
        node, _, name = field.rpartition(".")
        (config if not node else config[node])[name] = value
    return config


@pytest.mark.slow  # Two offline runs (the module's), then an online run on each architecture.
@pytest.mark.parametrize(("architecture", "agent"), [("anakin", "iql"), ("sebulba", "rebrac")])
def test_an_online_run_begins_with_the_offline_agent_and_its_dataset_in_the_buffer(offline_runs, architecture, agent):
    """The run's one update waits for more data, so it learns nothing: its state ends with the offline run's
    networks, targets and optimiser states bitwise, and each row of its buffer holds a share of the dataset's rows
    (1,600 transitions and their episodes' last timesteps, over the device's rows) and then the rollout's 4 steps."""
    config = online_config(agent, offline_runs[agent], architecture)
    state = podracer.train(config).learner_state
    learned = offline_runs[agent + "-state"]
    for field in type(state).__dataclass_fields__:
        if field not in (*replay.LOOP_FIELDS, "key"):  # ReBRAC's noise key: set by every `learn` call.
            for a, b in zip(
                jax.tree.leaves(getattr(state, field)), jax.tree.leaves(getattr(learned, field)), strict=True
            ):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    episodes, *_ = minari_files.read(offline_runs["dataset"])
    dataset_rows = sum(episode.steps + 1 for episode in episodes)  # Each episode's last timestep is a row too.
    buffer = state.replay.value.buffer
    rows = buffer.experience["action"].shape[1]  # Each device's environments (every device holds the dataset).
    assert rows * np.asarray(buffer.current_index).size == 8  # Over the learner devices.
    assert np.all(np.asarray(buffer.current_index) == dataset_rows // rows + 4)


@pytest.mark.slow  # An online run.
def test_keep_data_false_starts_with_an_empty_buffer(offline_runs):
    config = online_config("iql", offline_runs["iql"], **{"offline.keep_data": False})
    state = podracer.train(config).learner_state
    assert int(np.asarray(state.replay.value.buffer.current_index)[0]) == 4


@pytest.mark.slow  # Two online runs of 4 updates.
def test_a_resumed_run_goes_on_from_its_own_checkpoint_not_the_offline_one(offline_runs, tmp_path):
    """4 updates that learn (a checkpoint at 2); resumed from it in a copy of the workdir, the run ends bitwise
    where it did: the resumed run does not take the offline run's state or dataset again."""
    config = online_config("iql", offline_runs["iql"], total_steps=128, updates_per_dispatch=1)
    config.agent.min_replay_size = 64
    config.checkpoint.every_updates, config.checkpoint.every_minutes = 2, 0.0
    whole = podracer.train(config, workdir=str(tmp_path / "whole"))
    shutil.copytree(tmp_path / "whole", tmp_path / "split")
    for update in ("3", "4"):
        shutil.rmtree(tmp_path / "split" / "checkpoints" / update, ignore_errors=True)
    resumed = podracer.train(config, workdir=str(tmp_path / "split"))
    assert whole.history[-1]["loss"] > 0.0  # It learned.
    for a, b in zip(jax.tree.leaves(whole.learner_state), jax.tree.leaves(resumed.learner_state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow  # The module's offline runs, and one online run without the dataset.
def test_what_cannot_be_gone_on_from_is_refused_before_anything_compiles(offline_runs, tmp_path):
    iql, folder = offline_runs["iql"], offline_runs["folder"]
    os.makedirs(tmp_path / "empty")
    moved = shutil.copytree(iql, tmp_path / "moved")
    cases = [  # (agent, fields, the field named, words of the message)
        ("iql", {"offline.start_from": str(tmp_path / "none")}, "offline.start_from", "holds no checkpoint"),
        ("iql", {"offline.start_from": str(tmp_path / "empty")}, "offline.start_from", "holds no checkpoint"),
        ("rebrac", {}, "agent.name", "trained 'iql'"),
        ("iql", {"network.hidden_sizes": (64, 64)}, "network", "network.hidden_sizes=(32, 32)"),
        ("iql", {"env.name": "gymnax:MountainCarContinuous-v0"}, "offline.start_from", "observations float32[3]"),
        ("td3_bc", {}, "agent.name", "learns only from a dataset"),
        ("iql", {"offline.dataset": offline_runs["dataset"]}, "offline.start_from", "not from a dataset as well"),
        ("iql", {"population.seed": (0, 1)}, "offline.start_from", "one run of one process"),
    ]
    for agent, fields, field, words in cases:
        config = online_config(agent, iql, **fields)
        with pytest.raises(ConfigError) as raised:
            podracer.train(config)
        assert raised.value.field == field and words in str(raised.value), str(raised.value)
    shutil.rmtree(folder / "pendulum-random-v0")  # The dataset the run learned from is gone:
    try:
        with pytest.raises(ConfigError, match="learned from a dataset that cannot be read") as raised:
            podracer.train(online_config("iql", str(moved)))
        assert raised.value.field == "offline.start_from"
        assert podracer.train(online_config("iql", str(moved), **{"offline.keep_data": False})).history
    finally:
        record(PENDULUM, DATASET_TRANSITIONS, offline_runs["dataset"])
