"""Anakin actor-critic on the four-rooms grid world (Sutton, Precup & Singh 1999), random start, fixed goal."""

from podracer import defaults


def get_config():
    config = defaults("actor_critic")
    config.env.name = "four_rooms"
    config.env.kwargs.max_episode_steps = 100
    config.num_envs = 256
    config.unroll_length = 20
    config.total_steps = 2_048_000
    config.network.hidden_sizes = (128, 128)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 3e-3
    return config
