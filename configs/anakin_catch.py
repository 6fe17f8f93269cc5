"""Anakin actor-critic on Catch: the default experiment (`make run`). Solves Catch in seconds on a CPU."""

from podracer.config import defaults


def get_config():
    config = defaults("actor_critic")
    config.env.name = "catch"
    config.env.kwargs.rows = 10
    config.env.kwargs.columns = 5
    config.num_envs = 64
    config.unroll_length = 16
    config.total_steps = 1_000_000
    config.updates_per_dispatch = 20
    config.optimizer.learning_rate = 3e-3
    return config
