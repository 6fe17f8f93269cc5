"""`scripts.compare_purejaxrl`: how a run is cut into podracer's dispatches so that both sides make the same
updates, that both sides run the same hyperparameters, how fresh processes take turns, and how each side's speed and
final return are read.

Timing itself needs a PureJaxRL checkout and is not tested here.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import pytest

from scripts import compare_purejaxrl as compare
from scripts import on_path
from tests.helpers import ROOT, run, users_environment

runs = compare.purejaxrl_runs


@pytest.mark.parametrize(
    "updates, most, expected",
    [
        (976, 61, (61, 976)),  # CleanRL's CartPole: 16 dispatches of 61.
        (976, 10, (8, 976)),  # The same run at podracer's default of about 100 records: 122 dispatches of 8.
        (38, 4, (2, 38)),  # 2,048 environments, 1e7 steps: PureJaxRL's 38 updates, in pairs.
        (19531, 61, (61, 19520)),  # No divisor near 61: the last partial dispatch is dropped on both sides.
        (3, 4, (3, 3)),
        (0, 4, (4, 0)),  # Fewer steps than one update: the script refuses the run.
    ],
)
def test_dispatches_keep_the_updates_of_both_sides_equal(updates, most, expected):
    assert compare._dispatches(updates, most) == expected


def arguments(*argv: str) -> argparse.Namespace:
    return compare.make_parser().parse_args(["--purejaxrl", "/nowhere", *argv])


@pytest.mark.parametrize("task", sorted(compare.TASKS))
def test_both_sides_run_the_same_hyperparameters_and_steps(task):
    config, settings, steps = compare.plan(arguments("--task", task))
    agent, optimizer = config.agent, config.optimizer
    ours = (
        config.num_envs,
        config.unroll_length,
        agent.num_epochs,
        agent.num_minibatches,
        optimizer.learning_rate,
        optimizer.anneal_lr,
        optimizer.max_grad_norm,
        agent.gamma,
        agent.gae_lambda,
        agent.clip_epsilon,
        agent.clip_value_loss,
        agent.entropy_cost,
        agent.value_cost,
    )
    names = ("NUM_ENVS", "NUM_STEPS", "UPDATE_EPOCHS", "NUM_MINIBATCHES", "LR", "ANNEAL_LR", "MAX_GRAD_NORM")
    theirs = tuple(settings[name] for name in names) + (
        settings["GAMMA"],
        settings["GAE_LAMBDA"],
        settings["CLIP_EPS"],
        True,  # PureJaxRL always clips the value loss.
        settings["ENT_COEF"],
        settings["VF_COEF"],
    )
    assert ours == theirs
    assert steps == config.total_steps == settings["TOTAL_TIMESTEPS"]
    assert steps % (config.num_envs * config.unroll_length * config.updates_per_dispatch) == 0


def test_the_recurrent_task_is_ppo_rnn_s_network_and_wide_runs_use_every_core():
    config, settings, steps = compare.plan(
        arguments("--task", "cartpole_rnn", "--num-envs", "2048", "--total-steps", "1e7")
    )
    network = config.network
    assert (network.hidden_sizes, network.activation, network.core, network.core_size) == ((128,), "relu", "gru", 128)
    assert (network.shared_torso, network.head_hidden_sizes) == (True, (128,))
    assert compare.TASKS["cartpole_rnn"].module == "ppo_rnn"
    assert steps == 38 * 2048 * 128 and config.updates_per_dispatch == 1  # About 100 records: one update each.
    assert config.cpu_threads == 0


def test_updates_per_dispatch_caps_podracer_s_dispatches():
    config, _, steps = compare.plan(arguments("--updates-per-dispatch", "61"))
    assert (config.updates_per_dispatch, steps) == (61, 976 * 512)  # CleanRL's CartPole as 16 dispatches of 61.


def test_fresh_processes_take_turns_on_each_seed():
    assert compare.fresh_run_order(3) == [
        (0, "purejaxrl"),
        (0, "podracer"),
        (1, "podracer"),
        (1, "purejaxrl"),
        (2, "purejaxrl"),
        (2, "podracer"),
    ]


def test_a_fresh_process_is_given_the_same_run():
    args = arguments(
        "--task",
        "cartpole_rnn",
        "--num-envs",
        "2048",
        "--total-steps",
        "1e7",
        "--updates-per-dispatch",
        "2",
        "--fresh-processes",
    )
    command = compare.side_command(args, "podracer", 3)
    assert command[:4] == [sys.executable, "-P", "-m", "scripts.compare_purejaxrl"]
    child = compare.make_parser().parse_args(command[4:])
    expected = {**vars(args), "fresh_processes": False, "pairs": 6, "side": "podracer", "seed": 3}
    assert vars(child) == expected


def test_a_fresh_process_finds_the_scripts_from_any_folder():
    """A child started as the comparisons start theirs imports this checkout's `scripts`, even from a folder with a
    `scripts` package of its own (tests/ has one) and with no PYTHONPATH of the parent's."""
    command = compare.rerun_command("scripts.compare_purejaxrl", ["--help"], "podracer", 0)
    result = run(command, env=on_path(users_environment()), cwd=os.path.join(ROOT, "tests"))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "--purejaxrl" in result.stdout


def test_a_fresh_process_result_is_its_last_result_line():
    result = {"side": "purejaxrl", "steps_per_second": 1234.5, "final_return": 500.0}
    stdout = f"podracer: compiling\nRESULT {{}}\nRESULT {json.dumps(result)}\ntrailing output\n"
    assert compare.read_result(stdout) == result
    with pytest.raises(ValueError, match="RESULT"):
        compare.read_result("a run that printed nothing\n")


def test_purejaxrl_final_return_is_the_mean_of_its_last_episodes():
    returns = np.zeros((2, 3, 2))  # [updates, steps, environments]
    ended = np.zeros((2, 3, 2), bool)
    for (update, step, env), value in {(0, 0, 1): 10.0, (0, 2, 0): 20.0, (1, 1, 0): 30.0, (1, 1, 1): 40.0}.items():
        returns[update, step, env], ended[update, step, env] = value, True
    returns[1, 2, 1] = 99.0  # An episode under way: not counted.
    assert runs.last_episodes_mean(returns, ended) == 25.0
    assert runs.last_episodes_mean(returns, ended, episodes=2) == 35.0  # The two that ended last, at update 1.
    assert runs.last_episodes_mean(returns, ended, episodes=3) == 30.0
    assert math.isnan(runs.last_episodes_mean(returns, np.zeros_like(ended)))


def test_podracer_rate_weighs_each_dispatch_by_its_steps():
    history = [
        {"step": 100, "steps_per_second": 50.0},  # 2 s.
        {"step": 300, "steps_per_second": 100.0},  # 2 s.
        {"step": 400, "steps_per_second": 25.0},  # A shorter last dispatch: 4 s.
    ]
    assert runs.podracer_rate(history) == pytest.approx(400 / 8)
    assert runs.podracer_rate(history[:1]) == pytest.approx(50.0)
