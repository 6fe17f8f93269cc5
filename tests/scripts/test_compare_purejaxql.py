"""`scripts.compare_purejaxql`: both sides run the same hyperparameters for the same whole updates.

Timing itself needs a purejaxql checkout and is not tested here.
"""

import pytest

from scripts import compare_purejaxql as compare


def test_purejaxqls_settings_are_the_podracer_configs():
    config, settings, steps = compare.plan(2e6, 61)
    assert steps == settings["TOTAL_TIMESTEPS"] == settings["TOTAL_TIMESTEPS_DECAY"] == config.total_steps
    assert steps == 488 * 128 * 32  # Whole updates: purejaxql's NUM_UPDATES, 2e6 // 4,096.
    assert (settings["NUM_ENVS"], settings["NUM_STEPS"]) == (config.num_envs, config.unroll_length)
    agent, optimizer, network = config.agent, config.optimizer, config.network
    assert (settings["NUM_EPOCHS"], settings["NUM_MINIBATCHES"]) == (agent.num_epochs, agent.num_minibatches)
    assert (settings["GAMMA"], settings["LAMBDA"]) == (agent.gamma, agent.td_lambda)
    assert (settings["EPS_START"], settings["EPS_FINISH"], settings["EPS_DECAY"]) == (
        agent.epsilon_start,
        agent.epsilon_end,
        agent.epsilon_fraction,
    )
    assert (settings["LR"], settings["MAX_GRAD_NORM"]) == (optimizer.learning_rate, optimizer.max_grad_norm)
    assert settings["LR_LINEAR_DECAY"] == optimizer.anneal_lr and optimizer.name == "radam"
    assert network.hidden_sizes == (settings["HIDDEN_SIZE"],) * settings["NUM_LAYERS"] and network.layer_norm
    assert (network.torso, network.activation, agent.reward_scale) == ("mlp", "relu", 1.0)
    assert config.updates_per_dispatch == 61


def test_a_run_shorter_than_one_update_is_refused():
    with pytest.raises(ValueError, match="fewer than one update"):
        compare.plan(4000, 61)


def test_the_whole_machine_splits_each_minibatch_over_the_devices_keeping_its_size():
    """On D devices each takes its minibatch steps on its own 4,096 / D transitions, in `num_minibatches` minibatches
    (a count per device): D x 4,096 / (D x 32) = 128 transitions per averaged step, purejaxql's minibatch."""
    config, settings, _ = compare.plan(2e6, 61, cpu_devices=2)
    assert config.cpu_devices == config.num_devices == 2
    per_device = config.num_envs // 2 * config.unroll_length // config.agent.num_minibatches
    assert 2 * per_device == settings["NUM_ENVS"] * settings["NUM_STEPS"] // settings["NUM_MINIBATCHES"] == 128
    assert compare.plan(2e6, 61)[0].num_devices == 1
    args = compare.make_parser().parse_args(["--purejaxql", "x"])
    assert compare.podracer_devices(args) == 1
