"""Sebulba runs SAC with the same act and learn as Anakin: actor threads on envpool MuJoCo, replay on the learner
device. (TD3 differs from SAC only in what `off_policy.build` is given, so one of them is run here.)"""

import numpy as np
import pytest

import podracer
from tests.helpers import HANG_SECONDS


@pytest.mark.slow  # A short Sebulba run with a MuJoCo task and a replay agent's compile.
def test_sac_learns_from_envpool_halfcheetah_on_the_learner_devices_buffer():
    """Each update's rollouts (2 threads x 4 environments x 8 steps) go into the buffer in two learn calls
    (`learner_minibatches`), each taking its gradient steps once the buffer's rows hold 16 steps: from the
    second call of the second update on, 9 calls x 2 gradient steps in 6 updates."""
    config = podracer.defaults("sac", architecture="sebulba")
    config.env.name = "HalfCheetah-v4"
    config.update(envs_per_thread=4, unroll_length=8, learner_minibatches=2, total_steps=6 * 64, log_every_updates=2)
    config.update(stall_timeout_seconds=HANG_SECONDS, stop_grace_seconds=HANG_SECONDS)
    config.network.update(hidden_sizes=(16, 16), activation="relu")
    config.agent.update(replay_ratio=2, batch_size=16, min_replay_size=128)
    result = podracer.train(config)
    assert [record["step"] for record in result.history] == [128, 256, 384]
    assert all(np.isfinite(record["loss"]) and record["loss"] > 0 for record in result.history)
    assert int(result.learner_state.gradient_steps) == 9 * 2
