"""`scripts.compare_jaxmarl`: both sides run JaxMARL's IPPO settings for the same whole updates, at any number of
environments, and JaxMARL's logged return is put on podracer's scale.

Timing itself needs a JaxMARL checkout and is not tested here.
"""

import numpy as np
import pytest

from scripts import compare_jaxmarl as compare


def test_podracers_config_takes_jaxmarls_settings():
    config, settings, steps = compare.plan(1e6, 100)
    assert steps == settings["TOTAL_TIMESTEPS"] == config.total_steps == 488 * 16 * 128  # JaxMARL's NUM_UPDATES.
    assert config.env.name == "jaxmarl:" + settings["ENV_NAME"] and not settings["ENV_KWARGS"]
    assert (settings["NUM_ENVS"], settings["NUM_STEPS"]) == (config.num_envs, config.unroll_length)
    agent, optimizer, network = config.agent, config.optimizer, config.network
    assert (agent.name, agent.critic, agent.share_parameters) == ("ippo", "local", True)
    assert (settings["UPDATE_EPOCHS"], settings["NUM_MINIBATCHES"]) == (agent.num_epochs, agent.num_minibatches)
    assert (settings["GAMMA"], settings["GAE_LAMBDA"]) == (agent.gamma, agent.gae_lambda)
    assert (settings["CLIP_EPS"], settings["ENT_COEF"], settings["VF_COEF"]) == (
        agent.clip_epsilon,
        agent.entropy_cost,
        agent.value_cost,
    )
    assert agent.clip_value_loss and agent.normalize_advantages  # ippo_ff_mpe.py's loss, per minibatch.
    assert not (agent.normalize_observations or agent.scale_rewards or agent.reward_clip)
    assert (optimizer.name, optimizer.eps, optimizer.anneal_lr) == ("adam", 1e-5, settings["ANNEAL_LR"])
    assert (optimizer.learning_rate, optimizer.max_grad_norm) == (settings["LR"], settings["MAX_GRAD_NORM"])
    assert (network.torso, network.hidden_sizes, network.activation) == ("mlp", (64, 64), settings["ACTIVATION"])
    assert not network.shared_torso and not network.layer_norm  # Separate actor and critic towers.
    assert (config.updates_per_dispatch, config.cpu_threads) == (100, 1)


def test_both_sides_step_as_many_environments_in_whole_updates():
    config, settings, steps = compare.plan(1e6, 100, num_envs=64, cpu_threads=0)
    assert settings["NUM_ENVS"] == config.num_envs == 64
    assert steps == config.total_steps == 122 * 64 * 128 and config.cpu_threads == 0
    assert settings["NUM_MINIBATCHES"] == config.agent.num_minibatches == 4  # Minibatches grow with the batch.


def test_a_run_shorter_than_one_update_is_refused():
    with pytest.raises(ValueError, match="fewer than one update"):
        compare.plan(2000, 100)


def test_jaxmarls_logged_return_is_put_on_podracers_scale():
    """JaxMARL's MPE log wrapper logs each agent's return times the 3 agents; podracer reports the agents' mean."""
    outputs = {"metrics": {"returned_episode_returns": np.array([-90.0, -75.0, -60.0])}}  # One figure per update.
    assert compare.jaxmarl_return(outputs) == -20.0  # The last update's, over 3.


@pytest.mark.parametrize("algorithm", ["vdn", "qmix"])
def test_the_q_learning_configs_take_the_yamls_settings(algorithm):
    config, settings, steps = compare.plan(1e6, 100, num_envs=8, algorithm=algorithm)
    assert steps == settings["TOTAL_TIMESTEPS"] == config.total_steps == 4807 * 8 * 26  # JaxMARL's NUM_UPDATES.
    assert (config.agent.name, config.num_envs, config.unroll_length) == (algorithm, 8, settings["NUM_STEPS"])
    agent, optimizer = config.agent, config.optimizer
    assert (agent.gamma, agent.batch_size, agent.target_update_period) == (0.9, 32, 200)
    assert agent.buffer_size == settings["BUFFER_SIZE"] * settings["NUM_STEPS"]  # 5,000 rollouts, in steps.
    assert (agent.min_replay_size, agent.epsilon_end, agent.epsilon_fraction) == (10_000, 0.05, 0.1)
    assert (optimizer.name, optimizer.learning_rate, optimizer.max_grad_norm) == ("radam", 5e-3, 25)
    assert config.network.core_size == settings["HIDDEN_SIZE"] and agent.reward_scale == 3  # The agents' sum.


def test_a_q_learning_scripts_return_is_its_episodes_mean_over_the_agents():
    """Each update logs the mean over its steps of the return kept at the step an episode ended (one in 26)."""
    logged = [{"returned_episode_returns": np.float32(-90.0 / 26), "returned_episode": np.float32(1 / 26)}] * 20
    assert compare.q_learning_return(logged) == pytest.approx(-30.0)
