"""Anakin trains SAC and TD3 from their device replay: each learns Pendulum, and resumes bitwise from a checkpoint."""

import os
import shutil

import jax
import numpy as np
import pytest

import podracer
from tests.helpers import load_config


@pytest.mark.slow  # One compile, then 89,600 steps, and the last 6,400 again from a checkpoint.
@pytest.mark.default_compile  # Mostly runs: 61 CPU seconds here for the two, not 78 at -O0.
@pytest.mark.parametrize("name", ["sac", pytest.param("td3", marks=pytest.mark.extended)])
@pytest.mark.learning("last 100 episodes", at_least=-250, random=-1_237)
def test_learns_pendulum_and_a_run_resumed_from_its_checkpoint_ends_bitwise_where_it_did(
    tmp_path, capfd, name, learning
):
    """89,600 of the config's 102,400 steps (1,400 updates of 64 environments, 2,800 gradient steps): seeds 0-2
    of each end between -133 and -158 over the last 100 episodes (the last 2 of each environment's 7), and
    the first episodes score about -1,350. 76,800 steps are too few: TD3's seed 2 still scores -408 at 52,000.

    Resumed from the run's checkpoint of update 1,300 (in a copy of its workdir without the final one), the
    run ends bitwise where it did: the buffer, the optimisers' states, the targets and the learner's key are
    all in the checkpoint. Its 100 updates learn (the buffer full, targets moving), so a resume that dropped
    any of them would end elsewhere."""
    fields = {"num_devices": 1, "updates_per_dispatch": 100, "checkpoint.every_minutes": 0.0}
    fields |= {"checkpoint.every_updates": 1_300, "seed": learning.seed}
    config = load_config(f"anakin_pendulum_{name}", fields, total_steps=89_600)

    whole = podracer.train(config, workdir=str(tmp_path / "whole"))
    history = whole.history
    first = next(record["mean_episode_return"] for record in history if record["episodes"])
    assert first < -1_000
    learning.check(podracer.recent_return(history))
    assert sorted(os.listdir(tmp_path / "whole" / "checkpoints")) == ["1300", "1400"]
    shutil.copytree(tmp_path / "whole", tmp_path / "split")
    shutil.rmtree(tmp_path / "split" / "checkpoints" / "1400")  # As if the run had stopped at update 1,300.
    resumed = podracer.train(config, workdir=str(tmp_path / "split"))
    assert f"resuming from {tmp_path / 'split' / 'checkpoints' / '1300'}" in capfd.readouterr().err
    for a, b in zip(jax.tree.leaves(whole.learner_state), jax.tree.leaves(resumed.learner_state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert [r["step"] for r in resumed.history] == [r["step"] for r in history]
