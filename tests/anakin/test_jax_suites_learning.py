"""Anakin learns a task of each family of the JAX suites with its shipped config, by the mean of the last 100 episodes.

The families share an adapter: the grid worlds stoa adapts (XLand-MiniGrid here; Jumanji and Navix go the
same way), Pgx, and MuJoCo Playground (with Brax's episode rules). gymnax's family (gymnax, Craftax, POPGym
Arcade, one adapter) learns in `test_suite_learning.py`. Budgets are cut to a minute or so of this machine each.

At the suite's quick build compiling dominated these tests, not stepping: a one-update run (a process alone, one
CPU device, cold cache) cost Playground 57 of the CPU seconds its test budget's run cost (65), Pgx 22 of 41,
XLand-MiniGrid 31 of 36. All three now run under XLA's default build, whose faster steps outweigh its longer compile.
Shorter budgets left too little margin (the suite's two devices): Pgx 2048 at 410K steps scored 1,447 and 1,323
(seeds 0, 1), at 303K 1,430 (seed 0); XLand-MiniGrid at 328K 0.95 (seed 0, Adam at 5e-3).
"""

import pytest

import podracer
from tests.helpers import load_config


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.default_compile  # 44 CPU seconds here, not 54 at -O0.
@pytest.mark.learning("last 100 episodes", at_least=0.9, random=0.12)
def test_ppo_walks_straight_to_the_goal_of_xminigrid_empty_8x8(learning):
    """0.961 is the optimum (the goal in 11 steps). About 32 s alone here."""
    config = load_config("anakin_xminigrid_ppo", {"total_steps": 491_520}, seed=learning.seed)  # 60 updates.
    learning.check(podracer.recent_return(podracer.train(config).history))


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.default_compile  # 2048's steps are a third of its cost, slower at -O0: 63 s here, not 83.
@pytest.mark.learning("last 100 games", at_least=1_300, random=1_097)
def test_ppo_on_pgx_2048_beats_a_random_legal_policy(learning):
    """606K steps (about 30 s here) score 1,411-1,578 (seeds 0-4); a random legal policy's games average 1,097 with
    a standard deviation of 530 (`docs/environments.md`), so the mean of its 100 games is within 1,097 +- 53, and
    1,300 is four of those above it. 5M steps of this config score 7,000. The action mask keeps every move legal:
    one illegal move would end the game."""
    config = load_config("anakin_pgx_2048_ppo", {"total_steps": 606_208}, seed=learning.seed)  # 74 updates.
    learning.check(podracer.recent_return(podracer.train(config).history))


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.default_compile  # MJX's physics runs slowly at -O0.
@pytest.mark.learning("last 100 episodes", at_least=700, random=355)
def test_ppo_balances_playground_cartpole(learning):
    """1M steps score about 990 of 1,000 (seeds in docs/testing.md); a fallen pole scores far less than a random
    policy. Half that budget left seeds anywhere from 577 to 954: the policy is still climbing there.

    Every episode lasts 1,000 steps, so the 256 environments end theirs together, every 256K steps: the last 100
    episodes are those that ended at 1,024K steps.
    """
    config = load_config("anakin_playground_ppo", {"total_steps": 1_044_480}, seed=learning.seed)  # 136 updates.
    learning.check(podracer.recent_return(podracer.train(config).history))
