"""Anakin PPO on Pgx's 2048, playing only legal moves (the categorical head masks Pgx's `legal_action_mask`).

The mlp torso reads Pgx's observation, the board as 31 one-hot planes of tile
exponents (4x4x31 booleans, flattened); the action mask is not a network input.
Rewards are the merged tiles' values (up to thousands a move), so they are
scaled by the running std of the discounted return (`agent.scale_rewards`).
PureJaxRL's MinAtar settings otherwise: 64 environments x 128 steps, 4 epochs
x 8 minibatches, Adam 5e-3 annealed to 0, separate 64-64 ReLU actor and critic.
A random legal policy scores about 1,100 a game (118 moves). Needs the pgx
extra: pip install -e '.[pgx]'.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo")
    config.env.name = "pgx:2048"
    config.num_envs = 64
    config.unroll_length = 128
    config.total_steps = 4_997_120  # 610 updates of 64 x 128 steps.
    config.network.shared_torso = False
    config.network.activation = "relu"
    config.optimizer.learning_rate = 5e-3
    config.optimizer.anneal_lr = True
    config.agent.num_minibatches = 8
    config.agent.scale_rewards = True
    return config
