"""Anakin actor-critic on Catch: the default experiment (`make run`). Solves Catch in seconds on a CPU.

256 environments x 16 steps per update: on the 2-core CI machine (one XLA:CPU
thread) this batch trains faster per step than 64 environments, whose matrix
products are too small to keep the core busy, and it still solves Catch within
100 updates (400K steps). Five updates per dispatch keep the 20,480 steps
between log records of the earlier 64 x 16 x 20.
"""

from podracer.config import defaults


def get_config():
    config = defaults("actor_critic")
    config.env.name = "catch"
    config.env.kwargs.rows = 10
    config.env.kwargs.columns = 5
    config.num_envs = 256
    config.unroll_length = 16
    config.total_steps = 1_000_000
    config.updates_per_dispatch = 5
    config.optimizer.learning_rate = 3e-3
    return config
