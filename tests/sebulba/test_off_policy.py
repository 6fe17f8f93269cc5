"""Sebulba runs SAC with the same act and learn as Anakin: actor threads on envpool MuJoCo, replay on the learner
device, and learns Pendulum from it. (TD3 differs from SAC only in what `off_policy.build` is given, so one of them
is run here.)"""

import numpy as np
import pytest

import podracer
from tests.helpers import HANG_SECONDS, load_config


@pytest.mark.slow  # A short Sebulba run with a MuJoCo task and a replay agent's compile.
def test_sac_trains_from_envpool_halfcheetah_on_the_learner_devices_buffer():
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


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.default_compile  # Mostly runs: 59-77 s here (its own child session), 176 s at -O0.
@pytest.mark.learning("last 100 episodes", at_least=-300, random=-1225)
def test_sac_learns_envpool_pendulum(learning):
    """The shipped Anakin Pendulum SAC's agent (`configs/anakin_pendulum_sac.py`: 64-64 ReLU networks, Adam 2e-3,
    Polyak tau 0.02, learning from 2,000 steps on) on envpool's Pendulum-v1, with 2 actor threads x 64 environments
    stepping once per update and 16 gradient steps per update (one per 8 environment steps, the Anakin config's 32).

    All 128 environments end their 200-step episodes together, every 25,600 steps: the run's 416 updates play two
    rounds of them (and a few steps of a third, for the second round's ends to be logged), so the last 100 episodes
    are the second round's 128, none of them early. Seeds 0-4 score -164.7, -163.3, -161.6, -163.1 and -161.3
    there (seed 0's first round, learning from its 16th step on: -648); a uniformly random policy -1,225 (1,100
    episodes); with the actor never updated, seed 0 -1,268.
    """
    overrides = {"env.name": "Pendulum-v1", "network.hidden_sizes": (64, 64), "optimizer.learning_rate": 2e-3}
    overrides |= {"agent.target_tau": 0.02, "agent.replay_ratio": 16, "agent.buffer_size": 100_000}
    overrides |= {"agent.min_replay_size": 2_000}
    config = load_config("sebulba_halfcheetah_sac", overrides, envs_per_thread=64, unroll_length=1, seed=learning.seed)
    config.update(total_steps=416 * 128, log_every_updates=16)  # 416 updates of 2 threads x 64 environments x 1 step.
    history = podracer.train(config).history
    assert [record["episodes"] for record in history if record.get("episodes")] == [128, 128]
    learning.check(podracer.recent_return(history))
