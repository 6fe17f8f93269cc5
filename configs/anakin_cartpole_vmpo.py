"""Anakin V-MPO on CartPole-v1: categorical policy, separate 64-64 tanh actor and critic, one gradient step per update.

16 environments x 32 steps per update (V-MPO takes one step on each batch,
Song et al. 2020, Section 4), the top half of its 512 advantages weighted,
epsilon_eta 0.01 and epsilon_alpha 0.005 (the paper's discrete-action values,
Table 5), the target network copied every 10 updates, Adam 1e-3 for the network
and 1e-2 for eta and alpha, rewards scaled by the running standard deviation of
the discounted return. Seeds 0-2 end at 500 over the last 100 episodes.
"""

from podracer import defaults


def get_config():
    config = defaults("vmpo")
    config.env.name = "cartpole"
    config.num_envs = 16
    config.unroll_length = 32
    config.total_steps = 500_224  # 977 updates of 16 x 32 steps.
    config.network.shared_torso = False
    config.optimizer.learning_rate = 1e-3
    config.agent.scale_rewards = True
    config.log_records = 16
    return config
