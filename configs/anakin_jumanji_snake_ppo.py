"""Anakin PPO on Jumanji's Snake-v1, playing only legal moves (the categorical head masks Jumanji's `action_mask`).

Snake observes a dict: the 12x12 board as five channels-last feature planes
(`grid`: head, body, tail, fruit, body order), the steps taken (`step_count`,
up to 4,000) and the legal moves (`action_mask`, which is not a network
input). The mlp torso reads the flattened board and step count, normalised by
their running mean and variance (`agent.normalize_observations`, which only the
mlp torso supports); on a CPU the `multi_input` torso's CNN trains far slower.
A fruit is worth 1; the episode ends when the snake hits a wall or itself, or
after 4,000 steps (a truncation). A random legal policy eats about 6 fruits a
game. PureJaxRL's MinAtar settings otherwise: 64 environments x 128 steps, 4
epochs x 8 minibatches, Adam 5e-3 annealed to 0, separate 64-64 ReLU actor and
critic. Needs the jumanji extra: pip install -e '.[jumanji]'.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo")
    config.env.name = "jumanji:Snake-v1"
    config.num_envs = 64
    config.unroll_length = 128
    config.total_steps = 4_997_120  # 610 updates of 64 x 128 steps.
    config.network.shared_torso = False
    config.network.activation = "relu"
    config.optimizer.learning_rate = 5e-3
    config.optimizer.anneal_lr = True
    config.agent.num_minibatches = 8
    config.agent.normalize_observations = True
    return config
