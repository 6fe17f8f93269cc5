"""Sebulba PPO on envpool's MuJoCo HalfCheetah-v4 with CleanRL's continuous-action PPO settings.

CleanRL's `ppo_continuous_action.py`: 2,048 steps per update, 10 epochs x 32
minibatches, Adam 3e-4 annealed to 0, clipping 0.2, GAE lambda 0.95, no
entropy bonus, separate 64-64 tanh actor and critic with a state-independent
log-std, observations normalised and rewards scaled by running statistics,
1e6 steps (488 updates). Here 2 actor threads x 8 environments unroll 128
steps for the same 2,048-step batch, and acting stays one update behind.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo", architecture="sebulba")
    config.env.name = "HalfCheetah-v4"
    config.envs_per_thread = 8
    config.unroll_length = 128
    config.total_steps = 1_000_000
    config.log_every_updates = 8
    config.network.shared_torso = False
    config.optimizer.learning_rate = 3e-4
    config.optimizer.anneal_lr = True
    config.agent.num_epochs = 10
    config.agent.num_minibatches = 32
    config.agent.entropy_cost = 0.0
    config.agent.reward_clip = 10.0  # CleanRL clips the scaled rewards to [-10, 10].
    config.agent.normalize_observations = True
    config.agent.scale_rewards = True
    return config
