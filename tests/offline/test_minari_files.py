"""Datasets on disk: Minari reads podracer's as recorded, podracer reads Minari's, and a failed write leaves nothing."""

import os

import minari
import numpy as np
import pytest

from podracer.offline import minari_files
from podracer.offline.minari_files import DatasetError
from tests.offline.datasets import CONTINUOUS_ACTIONS, DISCRETE_ACTIONS, OBSERVATION_SPEC, random_episodes


def assert_same_episodes(read, written):
    assert len(read) == len(written)
    for a, b in zip(read, written, strict=True):
        for key in ("frame", "vector"):
            np.testing.assert_array_equal(a.observations[key], b.observations[key])
            assert a.observations[key].dtype == b.observations[key].dtype
        for field in ("actions", "rewards", "terminations", "truncations"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


@pytest.mark.parametrize("discrete", [True, False], ids=["discrete", "continuous"])
def test_a_written_dataset_reads_back_as_recorded_through_podracer_and_through_minari(tmp_path, monkeypatch, discrete):
    episodes = random_episodes(5, discrete=discrete)
    actions = DISCRETE_ACTIONS if discrete else CONTINUOUS_ACTIONS
    path = str(tmp_path / "toy-medium-v0")
    minari_files.write(path, episodes, OBSERVATION_SPEC, actions, {"agent": "td3"})
    assert sorted(os.listdir(tmp_path)) == ["toy-medium-v0"]  # No temporary folder left beside it.

    read, observation_spec, action_spec, metadata = minari_files.read(path)
    assert_same_episodes(read, episodes)
    steps, returns = sum(e.steps for e in episodes), [float(np.sum(e.rewards, dtype=np.float64)) for e in episodes]
    assert metadata == {"agent": "td3", "episodes": 5, "steps": steps, "mean_return": pytest.approx(np.mean(returns))}
    assert {key: (spec.shape, spec.dtype) for key, spec in observation_spec.items()} == {
        key: (spec.shape, spec.dtype) for key, spec in OBSERVATION_SPEC.items()
    }
    assert action_spec.shape == actions.shape

    dataset = minari.MinariDataset(os.path.join(path, "data"))  # Minari itself, from the path.
    assert dataset.total_episodes == 5 and dataset.total_steps == sum(episode.steps for episode in episodes)
    first = next(dataset.iterate_episodes())
    np.testing.assert_array_equal(first.observations["frame"], episodes[0].observations["frame"])
    np.testing.assert_array_equal(first.actions, episodes[0].actions)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))  # And by its name, as a local dataset.
    assert minari.load_dataset("toy-medium-v0").total_steps == dataset.total_steps


def test_a_write_that_fails_leaves_no_dataset_and_no_temporary_folder(tmp_path, monkeypatch):
    """As a killed run would: Minari has written its files when the failure comes, before the rename."""
    original = minari.create_dataset_from_buffers

    def write_then_fail(*args, **kwargs):
        original(*args, **kwargs)
        raise OSError("disk full")

    monkeypatch.setattr(minari, "create_dataset_from_buffers", write_then_fail)
    with pytest.raises(OSError, match="disk full"):
        minari_files.write(str(tmp_path / "d"), random_episodes(2), OBSERVATION_SPEC, DISCRETE_ACTIONS, {})
    assert os.listdir(tmp_path) == []


def test_an_existing_path_is_never_written_over(tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(DatasetError, match="exists already"):
        minari_files.write(str(tmp_path / "d"), random_episodes(1), OBSERVATION_SPEC, DISCRETE_ACTIONS, {})


def test_a_missing_or_unreadable_dataset_is_named_with_its_path(tmp_path):
    with pytest.raises(DatasetError, match=f"{tmp_path / 'nothing'} is not a dataset"):
        minari_files.read(str(tmp_path / "nothing"))
    broken = tmp_path / "broken" / "data"
    broken.mkdir(parents=True)
    (broken / "metadata.json").write_text("{not json")
    with pytest.raises(DatasetError, match=f"{tmp_path / 'broken'} cannot be read as a Minari dataset"):
        minari_files.read(str(tmp_path / "broken"))
