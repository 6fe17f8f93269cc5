"""Sebulba MuZero on envpool's CartPole-v1: the model and search of `anakin_cartpole_muzero`, fed by actor threads.

Two actor threads of 16 environments unroll 16 steps (512 steps per update);
the search runs on the actor device; the learner adds the steps to its
buffer and takes 64 gradient steps on batches of 128 sequences (one per 8
environment steps, as on Anakin). Acting is one update behind (policy_lag 1),
which replay does not mind. On 1 actor + 1 learner CPU device (the tests'
set-up), seeds 0-9 end 160K steps at 494-500 (mean of the last 100 episodes
490-500); some seeds stay near 130-150 (balancing, drifting off the track)
until 60-100K steps. With the stored search values as bootstraps
(`agent.value_bootstrap="search"`) seeds 0-4 ended 110K steps at 131-352.
"""

import os

from podracer import defaults, load_config


def get_config():
    anakin = load_config(os.path.join(os.path.dirname(__file__), "anakin_cartpole_muzero.py"))
    config = defaults("muzero", architecture="sebulba")
    config.network, config.optimizer, config.agent = anakin.network, anakin.optimizer, anakin.agent
    config.env.name = "CartPole-v1"
    config.envs_per_thread = 16
    config.unroll_length = 16
    config.total_steps = 160_000
    config.log_every_updates = 20
    config.agent.buffer_size = 50_000
    config.agent.min_replay_size = 2_000
    config.agent.batch_size = 128
    config.agent.replay_ratio = 64
    return config
