"""`scripts.compare_rejax`: podracer's config takes rejax's Pendulum SAC settings, on one device or split over two,
at 1 environment or more on both sides, and its CartPole IQN settings.

Timing itself needs rejax and is not tested here.
"""

import pytest

from scripts import compare_rejax as compare


def test_podracers_config_takes_rejaxs_settings():
    config, settings, steps = compare.plan("sac", 10_000, 1000)
    assert steps == settings["total_timesteps"] == config.total_steps == 10_000
    agent, optimizer, network = config.agent, config.optimizer, config.network
    assert (config.num_envs, config.unroll_length, agent.replay_ratio) == (
        settings["num_envs"],
        1,
        settings["num_epochs"],
    )
    assert (agent.batch_size, agent.buffer_size) == (settings["batch_size"], settings["buffer_size"])
    assert agent.min_replay_size == settings["fill_buffer"] + 1  # rejax learns once more than fill_buffer are in.
    assert (optimizer.name, optimizer.learning_rate, optimizer.eps) == ("adam", settings["learning_rate"], 1e-8)
    assert agent.gamma == settings["gamma"] and agent.target_tau == pytest.approx(1 - settings["polyak"])
    assert (network.hidden_sizes, network.activation) == ((64, 64), settings["agent_kwargs"]["activation"])
    assert (agent.initial_temperature, agent.target_entropy) == (1.0, None)  # rejax: log alpha 0, target -D.
    assert not settings["normalize_observations"]  # podracer's SAC has none.
    assert (config.evaluation.every_steps, config.evaluation.episodes, config.evaluation.greedy) == (steps, 128, False)


def test_two_devices_split_the_environments_buffer_and_batch():
    config, settings, _ = compare.plan("sac", 10_000, 1000, cpu_devices=2)
    agent = config.agent
    assert (config.cpu_devices, config.num_devices, config.num_envs) == (2, 2, 2)
    assert agent.replay_ratio == 2  # Per update of 2 environment steps: one gradient step per environment step.
    assert (agent.batch_size * 2, agent.buffer_size * 2) == (settings["batch_size"], settings["buffer_size"])


def test_both_sides_step_as_many_environments_with_a_gradient_step_each():
    config, settings, steps = compare.plan("sac", 10_001, 1000, cpu_devices=2, num_envs=2)
    assert (settings["num_envs"], settings["num_epochs"], config.num_envs) == (2, 2, 2)  # One per device.
    assert config.agent.replay_ratio == 2 and steps == 10_000  # Whole updates of 2 environment steps.
    with pytest.raises(ValueError, match="--num-envs 3"):
        compare.plan("sac", 10_000, 1000, cpu_devices=2, num_envs=3)


def test_a_run_that_never_learns_is_refused():
    with pytest.raises(ValueError, match="no gradient step"):
        compare.plan("sac", 256, 1000)


def test_podracers_iqn_takes_rejaxs_cartpole_settings():
    config, settings, steps = compare.plan("iqn", 100_000, 1000)
    agent, network = config.agent, config.network
    assert (config.agent.name, config.env.name, steps) == ("iqn", "gymnax:CartPole-v1", 100_000)
    assert (agent.batch_size, agent.buffer_size, agent.min_replay_size) == (1, 100_000, 1001)
    assert (agent.num_atoms, agent.kappa) == (settings["num_tau_samples"], settings["kappa"]) == (64, 1.0)
    assert settings["num_tau_prime_samples"] == agent.num_atoms  # N = N'.
    assert (agent.n_step, agent.double_q, agent.target_update_period) == (1, True, settings["target_update_freq"])
    assert agent.target_tau == pytest.approx(1 - settings["polyak"]) and agent.gamma == settings["gamma"]
    assert (agent.epsilon_start, agent.epsilon_end, agent.epsilon_fraction) == (1.0, 0.01, 0.5)
    assert (network.hidden_sizes, network.head_hidden_sizes, network.activation) == ((64, 64), (64,), "swish")
    assert (agent.embedding_size, agent.acting_quantiles) == (64, 32)  # rejax: the last hidden size; 32 for acting.
