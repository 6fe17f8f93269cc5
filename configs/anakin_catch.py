"""Anakin actor-critic on Catch: the default experiment (`make run`). Solves Catch in seconds on a CPU.

512 environments x 16 steps per update, split over one XLA:CPU device per
core (`cpu_devices = 0`, the default; on an accelerator, over its devices
instead). On the 2-core CI machine that is two devices of 256, one thread
each, which keeps each core busy: 256 environments per device train faster
per step than 64, whose matrix products are too small, and two devices about
1.5x as fast as one (docs/benchmarks.md). It solves
Catch in about 650K steps. Its 123 updates run two to a dispatch (with
`updates_per_dispatch` 0, podracer's choice), a record every 16,384 steps.
"""

from podracer import defaults


def get_config():
    config = defaults("actor_critic")
    config.env.name = "catch"
    config.env.kwargs.rows = 10
    config.env.kwargs.columns = 5
    config.num_envs = 512
    config.unroll_length = 16
    config.total_steps = 1_000_000
    config.optimizer.learning_rate = 3e-3
    return config
