"""Sebulba Sampled MuZero on Gymnasium's Pendulum-v1: the model and search of `anakin_pendulum_sampled_muzero`,
fed by an actor thread stepping Gymnasium's environments on the host.

One actor thread of 16 environments unrolls 8 steps (the Anakin config's 128
steps per update); the search over 8 sampled torques runs on the actor
device; the learner adds the steps to its buffer and takes the Anakin
config's 32 gradient steps on batches of 64 sequences. Acting is one update
behind (`policy_lag` 1), which replay does not mind. Gymnasium's Pendulum is
gymnax's (the same dynamics, reward and 200-step limit) stepped on the host.
"""

import os

from podracer import defaults, load_config


def get_config():
    anakin = load_config(os.path.join(os.path.dirname(__file__), "anakin_pendulum_sampled_muzero.py"))
    config = defaults("sampled_muzero", architecture="sebulba")
    config.network, config.optimizer, config.agent = anakin.network, anakin.optimizer, anakin.agent
    config.env.name = "gymnasium:Pendulum-v1"
    config.actor_threads_per_device = 1
    config.envs_per_thread = 16
    config.unroll_length = 8
    config.total_steps = anakin.total_steps
    return config
