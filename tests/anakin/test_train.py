"""Anakin end to end through `podracer.train`: agents learn, runs are deterministic, nested observations flow through."""

import math

import jax
import numpy as np
import pytest

import podracer
from tests.helpers import load_config

TIMING_FIELDS = ("steps_per_second", "compile_seconds", "wall_seconds")


def final_return(history):
    return history[-1]["mean_episode_return"]


@pytest.mark.slow
def test_actor_critic_learns_catch():
    history = podracer.train(load_config("anakin_catch", total_steps=800_000, seed=2)).history
    assert final_return(history) >= 0.9
    assert history[0]["mean_episode_return"] < 0.5  # It did not start solved.


@pytest.mark.slow
def test_actor_critic_learns_nested_catch():
    config = load_config("anakin_catch", {"env.name": "nested_catch"}, total_steps=800_000)
    history = podracer.train(config).history
    assert final_return(history) >= 0.9


@pytest.mark.slow
def test_ppo_learns_cartpole_with_cleanrl_hyperparameters():
    history = podracer.train(load_config("anakin_cartpole_ppo")).history
    assert history[-1]["step"] == 499_712
    assert final_return(history) >= 475
    assert history[0]["mean_episode_return"] < 100


@pytest.mark.slow
def test_actor_critic_learns_four_rooms():
    history = podracer.train(load_config("anakin_gridworld", total_steps=1_536_000)).history
    assert history[0]["mean_episode_length"] > 40  # A random walk rarely finds the goal in 100 steps.
    assert final_return(history) >= 0.98
    assert history[-1]["mean_episode_length"] < 20  # Close to the shortest paths from random starts.


def test_same_seed_gives_bitwise_identical_metrics_and_parameters():
    config = load_config("anakin_cartpole_ppo", total_steps=4 * 128 * 6, updates_per_dispatch=2)
    run_a, run_b = [podracer.train(config) for _ in range(2)]
    strip = lambda history: [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in history]  # noqa: E731
    assert strip(run_a.history) == strip(run_b.history)
    assert len(run_a.history) == 3
    for a, b in zip(
        jax.tree.leaves(run_a.learner_state.params), jax.tree.leaves(run_b.learner_state.params), strict=True
    ):
        np.testing.assert_array_equal(a, b)
    config.seed = 1
    run_c = podracer.train(config)
    assert strip(run_c.history) != strip(run_a.history)


def test_metrics_records_have_the_documented_fields():
    events = []
    config = load_config("anakin_gridworld", total_steps=256 * 20 * 4, updates_per_dispatch=2)
    result = podracer.train(config, callbacks=[events.append])
    history = result.history
    record = history[-1]
    for field in (
        "step",
        "steps_per_second",
        "mean_episode_return",
        "episodes",
        "mean_episode_length",
        "loss",
        "policy_loss",
        "value_loss",
        "entropy",
    ):
        assert field in record
    assert record["step"] == result.steps == 256 * 20 * 4
    assert all(math.isfinite(record[k]) for k in ("loss", "policy_loss", "value_loss", "entropy"))
    assert "compile_seconds" in history[0]
    # Every record went to the callbacks too, the last one marked final.
    assert [event.record for event in events] == history
    assert [event.final for event in events] == [False, True]
    assert all(event.total_steps == result.steps for event in events)
    # The acting parameters are the learner's, replicated over the test process's two devices.
    assert len(jax.tree.leaves(result.learner_state.params)[0].sharding.device_set) == 2
    for a, b in zip(jax.tree.leaves(result.acting_params), jax.tree.leaves(result.learner_state.params), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow  # Two runs and a recompilation, about 7 s.
def test_a_dispatch_slower_than_its_bound_is_split_without_changing_the_result(capsys):
    fields = {"num_envs": 16, "updates_per_dispatch": 4, "total_steps": 16 * 16 * 4 * 3}
    whole = podracer.train(load_config("anakin_catch", fields))
    split = podracer.train(load_config("anakin_catch", fields, max_dispatch_seconds=1e-6))  # Every dispatch too slow.
    assert "dispatching 1 at a time" in capsys.readouterr().err  # Said why it recompiles.
    assert [r["step"] // (16 * 16) for r in whole.history] == [4, 8, 12]
    assert [r["step"] // (16 * 16) for r in split.history] == [4, 5, 6, 7, 8, 9, 10, 11, 12]  # Then one at a time.
    for a, b in zip(jax.tree.leaves(whole.learner_state), jax.tree.leaves(split.learner_state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
