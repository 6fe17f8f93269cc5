"""Anakin end to end through `podracer.train`: agents learn, runs are deterministic, nested observations flow through."""

import json
import math

import jax
import numpy as np
import pytest

import podracer
from tests.helpers import last_json_line, load_config, run_module

TIMING_FIELDS = ("steps_per_second", "compile_seconds", "wall_seconds")


def final_return(history):
    """The mean return of the run's last 100 episodes."""
    return podracer.recent_return(history)


@pytest.mark.slow
@pytest.mark.learning("last 100 episodes", at_least=0.9, random=-0.6)
def test_actor_critic_learns_catch(learning):
    history = podracer.train(load_config("anakin_catch", total_steps=800_000, seed=learning.seed)).history
    assert history[0]["mean_episode_return"] < 0.5  # It did not start solved.
    learning.check(final_return(history))


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.learning("last 100 episodes", at_least=0.9, random=-0.6)
def test_actor_critic_learns_nested_catch(learning):
    config = load_config("anakin_catch", {"env.name": "nested_catch"}, total_steps=800_000, seed=learning.seed)
    learning.check(final_return(podracer.train(config).history))


@pytest.mark.slow
@pytest.mark.default_compile  # Mostly runs: 25 CPU seconds here, not 37 at -O0.
@pytest.mark.learning("last 100 episodes", at_least=475, random=22)
def test_ppo_learns_cartpole_with_cleanrl_hyperparameters(learning):
    history = podracer.train(load_config("anakin_cartpole_ppo", seed=learning.seed)).history
    assert history[-1]["step"] == 499_712
    assert history[0]["mean_episode_return"] < 100
    learning.check(final_return(history))


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.default_compile  # Mostly runs: 29 CPU seconds here, not 48 at -O0.
@pytest.mark.learning("last 100 episodes", at_least=0.95, random=0.19)
@pytest.mark.learning("last record's mean episode length", at_most=20)
def test_actor_critic_learns_four_rooms(learning):
    # 200 updates: returns are 0.98 from about 570K steps and episodes under 20 steps from 800K (16 at the end); seeds
    # 0-4 end at 1.0 and 15.3-16.0 steps (docs/testing.md).
    history = podracer.train(load_config("anakin_gridworld", total_steps=1_024_000, seed=learning.seed)).history
    # Over the first 200 steps of each environment (10 updates), a random walk rarely finds the goal in 100 steps.
    early = [record for record in history if record["step"] <= 256 * 200]
    lengths = sum(record["mean_episode_length"] * record["episodes"] for record in early if record["episodes"])
    assert lengths / sum(record["episodes"] for record in early) > 40
    learning.check(final_return(history), "last 100 episodes")
    learning.check(history[-1]["mean_episode_length"], "last record's mean episode length")  # Near the shortest paths.


@pytest.mark.slow  # Two whole runs.
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


@pytest.mark.slow  # A whole run, about 7 s; the budget runs below stay in `make test-fast`.
def test_metrics_records_have_the_documented_fields():
    """On the first budget's run below (its program compiled once for both): 5 records, on the 2 devices."""
    events = []
    result = podracer.train(load_config("anakin_catch", BUDGETS[0][0]), callbacks=[events.append])
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
    assert record["step"] == result.steps == 1024
    assert record["episodes"] > 0 and math.isfinite(record["mean_episode_return"])
    assert all(math.isfinite(record[k]) for k in ("loss", "policy_loss", "value_loss", "entropy"))
    assert "compile_seconds" in history[0]
    # Every record went to the callbacks too, the last one marked final.
    assert [event.record for event in events] == history
    assert [event.final for event in events] == [False] * 4 + [True]
    assert all(event.total_steps == result.steps for event in events)
    # The acting parameters are the learner's, replicated over the test process's two devices.
    assert len(jax.tree.leaves(result.learner_state.params)[0].sharding.device_set) == 2
    for a, b in zip(jax.tree.leaves(result.acting_params), jax.tree.leaves(result.learner_state.params), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow  # Two runs, about 5 s.
def test_a_dispatch_slower_than_its_bound_is_split_without_changing_the_result(capsys):
    fields = {"num_envs": 16, "updates_per_dispatch": 4, "total_steps": 16 * 16 * 4 * 3}
    whole = podracer.train(load_config("anakin_catch", fields))
    split = podracer.train(load_config("anakin_catch", fields, max_dispatch_seconds=1e-6))  # Every dispatch too slow.
    assert "dispatching 1 at a time" in capsys.readouterr().err  # Said why it logs more often.
    assert [r["step"] // (16 * 16) for r in whole.history] == [4, 8, 12]
    assert [r["step"] // (16 * 16) for r in split.history] == [4, 5, 6, 7, 8, 9, 10, 11, 12]  # Then one at a time.
    for a, b in zip(jax.tree.leaves(whole.learner_state), jax.tree.leaves(split.learner_state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# Overrides of configs/anakin_catch.py, and the step of each log record they must give: `total_steps` honoured to a
# whole update, the dispatch length from log_records (or updates_per_dispatch), the last dispatch shorter.
SLOW = pytest.mark.slow  # A whole run of its own, about 5 s: `make test-fast` keeps the first case only.
BUDGETS = [
    # 8 x 4 = 32 steps an update: 1,000 steps take 32 updates (1,024 steps); 5 records, of 7 updates, the last of 4.
    ({"num_envs": 8, "unroll_length": 4, "total_steps": 1000, "log_records": 5}, [224, 448, 672, 896, 1024]),
    # 16 x 2 = 32 steps: 96 are exactly 3 updates; dispatched 2 at a time, so the last dispatch runs 1.
    pytest.param(
        {"num_envs": 16, "unroll_length": 2, "total_steps": 96, "updates_per_dispatch": 2}, [64, 96], marks=SLOW
    ),
    # Two devices of 4 environments, 3 steps: 24 steps an update; 100 steps take 5 updates, a record after each.
    pytest.param(
        {"num_envs": 8, "num_devices": 2, "unroll_length": 3, "total_steps": 100}, [24, 48, 72, 96, 120], marks=SLOW
    ),
    # A population's budget, rounded and with a shorter last dispatch: on four devices, in the test below.
]


@pytest.mark.parametrize("fields, record_steps", BUDGETS)
def test_total_steps_is_honoured_to_a_whole_update_and_the_run_logs_its_curve(fields, record_steps, capfd):
    result = podracer.train(load_config("anakin_catch", fields))
    assert [record["step"] for record in result.history] == record_steps
    assert result.steps == record_steps[-1]
    rounded = record_steps[-1] != fields["total_steps"]
    said = [line for line in capfd.readouterr().err.splitlines() if "is not a whole number of updates" in line]
    assert len(said) == rounded  # One line when it rounds, and none when it does not.
    if rounded:
        assert f"{record_steps[-1]:,} steps" in said[0]


@pytest.mark.slow  # Two runs in a fresh process with four devices, about 10 s.
def test_budgets_on_four_devices_with_and_without_a_population():
    """Both rounded to whole updates, each saying so in one line; the population's last dispatch is shorter.

    The only population budget in the file (a second one, on the session's 2 devices, compiled another
    population program to check the same rounding and dispatching)."""
    cases = [
        # 8 environments on 4 devices, 2 steps: 16 steps an update; 33 steps take 3 updates, 2 a dispatch.
        ({"num_envs": 8, "unroll_length": 2, "total_steps": 33, "log_records": 2}, [32, 48]),
        # Three members, each 4 environments (one a device) x 5 steps: 20 steps an update; 50 steps take 3 updates,
        # dispatched 2 at a time, so the last dispatch runs 1.
        (
            {
                "num_envs": 4,
                "unroll_length": 5,
                "total_steps": 50,
                "updates_per_dispatch": 2,
                "population.seed": [0, 1, 2],
            },
            [40, 60],
        ),
    ]
    result = run_module("budget_runs", json.dumps([fields for fields, _ in cases]), num_devices=4)
    assert result.returncode == 0, result.stderr
    runs = last_json_line(result.stdout)
    assert [run["record_steps"] for run in runs] == [steps for _, steps in cases]
    assert [run["steps"] for run in runs] == [48, 60 * 3]
    assert [run["devices"] for run in runs] == [4, 4]
    said = [line for line in result.stderr.splitlines() if "is not a whole number of updates" in line]
    assert len(said) == 2 and "running 3 updates, 48 steps" in said[0] and "running 3 updates, 60 steps" in said[1]
