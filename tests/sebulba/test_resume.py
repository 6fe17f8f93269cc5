"""Sebulba checkpoints and resumes its learner exactly, and with a fixed policy lag two resumes agree bitwise.

The actors' environments restart on a resume (their states live in C++ or
Python objects, not in arrays a checkpoint can hold), with seeds derived from
(seed, number of resumes), so a resumed run differs from an uninterrupted one
after the resume; what must hold is that the learner goes on from exactly the
saved state and version, and that the run stays deterministic.
"""

import json
import shutil

import jax
import numpy as np
import pytest

import podracer
from podracer.sebulba import sebulba_settings
from tests.helpers import small_sebulba_cartpole

UPDATE_STEPS = 8 * 6 * 2  # small_sebulba_cartpole: unroll 8 x 6 environments x 2 actor threads.


def config(updates: int, **overrides):
    return small_sebulba_cartpole(
        **{"checkpoint.every_updates": 2, "checkpoint.every_minutes": 0, "total_steps": UPDATE_STEPS * updates},
        **overrides,
    )


def leaves(tree) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree.leaves(tree)]


def steps(workdir) -> list[int]:
    return [json.loads(line)["step"] for line in (workdir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow  # Three Sebulba runs: 8 s.
def test_resume_restores_the_learner_state_and_version_exactly(tmp_path):
    finished = podracer.train(config(3), workdir=str(tmp_path))
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["2", "3"]  # Every 2 and at the end.
    again = podracer.train(config(3), workdir=str(tmp_path))  # Nothing left to do: the restored state comes back.
    for restored, saved in zip(leaves(again.learner_state), leaves(finished.learner_state), strict=True):
        np.testing.assert_array_equal(restored, saved)  # Parameters and optimiser state.
    assert steps(tmp_path) == [UPDATE_STEPS * u for u in (1, 2, 3)]
    meta = json.loads((tmp_path / "checkpoints" / "3" / "meta" / "metadata").read_text())
    assert meta["update"] == 3 and meta["resumes"] == 0  # The update count is the parameter version.


@pytest.mark.slow  # Four short runs, about 10 s.
def test_two_resumes_from_one_checkpoint_give_identical_parameters(tmp_path):
    podracer.train(config(2), workdir=str(tmp_path / "first"))
    results = []
    for name in ("a", "b"):
        shutil.copytree(tmp_path / "first", tmp_path / name)
        results.append(podracer.train(config(5), workdir=str(tmp_path / name)))
        # metrics.jsonl goes on from the checkpoint: no step missing or repeated.
        assert steps(tmp_path / name) == [UPDATE_STEPS * u for u in range(1, 6)]
    for a, b in zip(leaves(results[0].learner_state), leaves(results[1].learner_state), strict=True):
        np.testing.assert_array_equal(a, b)
    meta = json.loads((tmp_path / "a" / "checkpoints" / "5" / "meta" / "metadata").read_text())
    assert meta["resumes"] == 1
    uninterrupted = podracer.train(config(5))
    assert not all(
        np.array_equal(a, b)
        for a, b in zip(leaves(results[0].learner_state), leaves(uninterrupted.learner_state), strict=True)
    )  # The resume restarted the environments with new seeds.


def test_each_resume_seeds_its_environments_afresh():
    cfg = small_sebulba_cartpole()
    seeds = {
        (thread, resumes): sebulba_settings.env_seed(cfg, thread, 2, resumes)
        for thread in (0, 1)
        for resumes in (0, 1, 2)
    }
    # Each thread's 6 environments take seeds seed + i from its base: no two bases closer than 6.
    bases = sorted(seeds.values())
    assert all(later - earlier >= cfg.envs_per_thread for earlier, later in zip(bases, bases[1:], strict=False))
    assert seeds[(0, 0)] == cfg.seed  # A first start keeps the seeds it always had.
