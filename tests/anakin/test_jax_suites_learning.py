"""Anakin learns a task of each family of the JAX suites with its shipped config, by the mean of the last 100 episodes.

The families share an adapter: the grid worlds stoa adapts (XLand-MiniGrid here; Jumanji and Navix go the
same way), Pgx, and MuJoCo Playground (with Brax's episode rules). gymnax's family (gymnax, Craftax, POPGym
Arcade, one adapter) learns in `test_suite_learning.py`. Budgets are cut to a minute of this machine each.

Compiling dominates these tests, not stepping: a one-update run (a process alone, one CPU device, cold cache)
costs Playground 57 of the CPU seconds its test budget's run costs (65), Pgx 22 of 41, XLand-MiniGrid 31 of 36.
Shorter budgets left too little margin (the suite's two devices): Pgx 2048 at 410K steps scored 1,447 and 1,323
(seeds 0, 1), at 303K 1,430 (seed 0); XLand-MiniGrid at 328K 0.95 (seed 0).
"""

import pytest

import podracer
from tests.helpers import load_config


@pytest.mark.slow
def test_ppo_walks_straight_to_the_goal_of_xminigrid_empty_8x8():
    """0.961 is the optimum (the goal in 11 steps); a random policy scores about 0.12. About 25 s here."""
    config = load_config("anakin_xminigrid_ppo", {"total_steps": 491_520})  # 60 updates.
    score = podracer.recent_return(podracer.train(config).history)
    assert score > 0.9, f"last 100 episodes {score:.3f}"


@pytest.mark.slow
def test_ppo_on_pgx_2048_beats_a_random_legal_policy():
    """606K steps (about 30 s here) score about 1,540; a random legal policy scores 1,097 (a game's standard
    deviation 530: `docs/environments.md`), and 5M steps of this config 7,000. The action mask keeps every
    move legal: one illegal move would end the game."""
    config = load_config("anakin_pgx_2048_ppo", {"total_steps": 606_208})  # 74 updates.
    score = podracer.recent_return(podracer.train(config).history)
    assert score > 1_400, f"last 100 games {score:.0f}"


@pytest.mark.slow
def test_ppo_balances_playground_cartpole():
    """522K steps (about 40 s here) score about 780 of 1,000; a random policy about 355, a fallen pole far less.

    Every episode lasts 1,000 steps, so the 256 environments end theirs together, at 256K and 512K steps.
    """
    config = load_config("anakin_playground_ppo", {"total_steps": 522_240})  # 68 updates.
    score = podracer.recent_return(podracer.train(config).history)
    assert score > 700, f"last 100 episodes {score:.0f}"
