"""Sebulba PPO on envpool's CartPole-v1: CleanRL's PPO hyperparameters with a larger acting batch.

Two actor threads of 16 environments unroll 32 steps each (1,024 steps per
update); 4 epochs x 4 minibatches, Adam 2.5e-4 annealed to 0, clipping 0.2,
GAE lambda 0.95, separate 64-64 tanh actor and critic. Acting stays one update
behind learning (policy_lag 1), which PPO's clipped ratio absorbs.
"""

from podracer.config import defaults


def get_config():
    config = defaults("ppo", architecture="sebulba")
    config.env.name = "CartPole-v1"
    config.envs_per_thread = 16
    config.unroll_length = 32
    config.total_steps = 500_000
    config.network.shared_torso = False
    config.optimizer.learning_rate = 2.5e-4
    config.optimizer.anneal_lr = True
    return config
