"""Sebulba's continuous PPO improves on envpool's MuJoCo HalfCheetah-v4 within a short run."""

import pytest

import podracer
from tests.helpers import load_config


@pytest.mark.slow
@pytest.mark.learning("last record's mean return over the first's", at_least=100, random=0)
def test_ppo_improves_on_halfcheetah(learning):
    """6 log records of 8 updates (16 episodes of 1,000 steps each), 98,304 steps, seed 1.

    The first record's episodes were acted by the initial policy (about -300 here,
    from its control cost); CleanRL's PPO is near 0 after 1e5 steps and ~1,500
    after 1e6. Observation normalisation and reward scaling are on, as shipped.
    """
    fields = {"total_steps": 98_304, "log_every_updates": 8}
    history = podracer.train(load_config("sebulba_halfcheetah_ppo", fields, seed=learning.seed)).history
    learning.check(history[-1]["mean_episode_return"] - history[0]["mean_episode_return"])
