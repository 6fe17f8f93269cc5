"""Sebulba's continuous PPO improves on envpool's MuJoCo HalfCheetah-v4 within a short run."""

import pytest

import podracer
from tests.helpers import load_config


@pytest.mark.slow
def test_ppo_improves_on_halfcheetah():
    """6 log records of 8 updates (16 episodes of 1,000 steps each), 98,304 steps, seed 1.

    The first record's episodes were acted by the initial policy (about -300 here,
    from its control cost); CleanRL's PPO is near 0 after 1e5 steps and ~1,500
    after 1e6. Observation normalisation and reward scaling are on, as shipped.
    """
    config = load_config("sebulba_halfcheetah_ppo", {"total_steps": 98_304, "log_every_updates": 8}, seed=1)
    history = podracer.train(config).history
    returns = [record["mean_episode_return"] for record in history]
    print([round(r, 1) for r in returns])
    assert returns[-1] > returns[0] + 100, f"mean episode return went {returns[0]:.1f} -> {returns[-1]:.1f}"
