"""Anakin actor-critic on Catch: the default experiment (`make run`). Solves Catch in seconds on a CPU.

512 environments x 16 steps per update, split over two XLA:CPU devices of 256
(`cpu_devices`; on an accelerator, over its devices instead). On the 2-core CI
machine one thread per device keeps each core busy: 256 environments per
device train faster per step than 64, whose matrix products are too small,
and two devices about 1.5x as fast as one (docs/benchmarks.md). It solves
Catch in about 650K steps. Its 123 updates run two to a dispatch (with
`updates_per_dispatch` 0, podracer's choice), a record every 16,384 steps.
"""

from podracer import defaults


def get_config():
    config = defaults("actor_critic")
    config.env.name = "catch"
    config.env.kwargs.rows = 10
    config.env.kwargs.columns = 5
    config.cpu_devices = 2
    config.num_envs = 512
    config.unroll_length = 16
    config.total_steps = 1_000_000
    config.optimizer.learning_rate = 3e-3
    return config
