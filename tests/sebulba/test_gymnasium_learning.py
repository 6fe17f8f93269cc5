"""Sebulba learns a Gymnasium environment that this test registers, stepped in Gymnasium's worker processes."""

import gymnasium
import pytest

import podracer
from tests.envs.gymnasium_envs import CuedCorridor
from tests.helpers import load_config

ENV_ID = "CuedCorridorTest-v0"


@pytest.mark.slow
@pytest.mark.learning("last 100 episodes", at_least=0.9)
def test_sebulba_learns_a_gymnasium_environment_registered_here(learning):
    gymnasium.register(ENV_ID, entry_point=CuedCorridor, max_episode_steps=20)
    # 30 updates of 256 steps, 3 records: 0.46, 1.0, 1.0 (with 20 updates: 0.40, 0.99; 50 updates: 0.5, then 1.0).
    config = load_config(
        "sebulba_gymnasium_cartpole",
        {"env.name": f"gymnasium:{ENV_ID}", "envs_per_thread": 4, "unroll_length": 32, "total_steps": 7_680},
        seed=learning.seed,
    )
    learning.check(podracer.recent_return(podracer.train(config).history))  # Reading the cue scores 1.
