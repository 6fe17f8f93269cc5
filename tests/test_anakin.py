"""Anakin end to end on one device: agents learn, runs are deterministic, nested observations flow through."""

import math

import jax
import numpy as np
import pytest

from podracer.anakin import train
from tests.helpers import load_config

TIMING_FIELDS = ("steps_per_second", "compile_seconds")


def final_return(history):
    return history[-1]["mean_episode_return"]


@pytest.mark.slow
def test_actor_critic_learns_catch():
    _, history = train(load_config("anakin_catch", total_steps=400_000), show_progress=False)
    assert final_return(history) >= 0.9
    assert history[0]["mean_episode_return"] < 0.5  # It did not start solved.


@pytest.mark.slow
def test_actor_critic_learns_nested_catch():
    config = load_config("anakin_catch", total_steps=400_000)
    config.env.name = "nested_catch"
    _, history = train(config, show_progress=False)
    assert final_return(history) >= 0.9


@pytest.mark.slow
def test_ppo_learns_cartpole_with_cleanrl_hyperparameters():
    _, history = train(load_config("anakin_cartpole_ppo"), show_progress=False)
    assert history[-1]["step"] == 499_712
    assert final_return(history) >= 475
    assert history[0]["mean_episode_return"] < 100


@pytest.mark.slow
def test_actor_critic_learns_four_rooms():
    _, history = train(load_config("anakin_gridworld", total_steps=1_536_000), show_progress=False)
    assert history[0]["mean_episode_length"] > 40  # A random walk rarely finds the goal in 100 steps.
    assert final_return(history) >= 0.98
    assert history[-1]["mean_episode_length"] < 20  # Close to the shortest paths from random starts.


def test_same_seed_gives_bitwise_identical_metrics_and_parameters():
    config = load_config("anakin_cartpole_ppo", total_steps=4 * 128 * 6, updates_per_dispatch=2)
    runs = [train(config, show_progress=False) for _ in range(2)]
    (state_a, history_a), (state_b, history_b) = runs
    strip = lambda history: [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in history]
    assert strip(history_a) == strip(history_b)
    assert len(history_a) == 3
    for a, b in zip(jax.tree.leaves(state_a.learner.params), jax.tree.leaves(state_b.learner.params)):
        np.testing.assert_array_equal(a, b)
    config.seed = 1
    _, history_c = train(config, show_progress=False)
    assert strip(history_c) != strip(history_a)


def test_metrics_records_have_the_documented_fields():
    _, history = train(load_config("anakin_gridworld", total_steps=256 * 20 * 4, updates_per_dispatch=2), show_progress=False)
    record = history[-1]
    for field in ("step", "steps_per_second", "mean_episode_return", "episodes", "mean_episode_length", "loss", "policy_loss", "value_loss", "entropy"):
        assert field in record
    assert record["step"] == 256 * 20 * 4
    assert all(math.isfinite(record[k]) for k in ("loss", "policy_loss", "value_loss", "entropy"))
    assert "compile_seconds" in history[0]
