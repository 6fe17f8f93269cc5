"""Sebulba PQN on envpool's CartPole-v1: the network, optimiser and agent of `anakin_cartpole_pqn` fed by actor threads.

Two actor threads of 16 environments unroll 64 steps: 2,048 steps per update,
the Anakin config's (purejaxql's 32 x 64), 4 epochs x 16 minibatches each, 5e5
steps. Acting is one update behind (policy_lag 1): the targets then bootstrap
from Q-values one update old, except at each rollout's end. Here (2 CPU
devices, the 2-core machine shared with other work) it ends at 476 over the
last 100 episodes (epsilon still 0.2), as the Anakin config does, in 68 s;
with policy_lag 0 at 471, in 70 s.
"""

import os

from podracer import defaults, load_config


def get_config():
    anakin = load_config(os.path.join(os.path.dirname(__file__), "anakin_cartpole_pqn.py"))
    config = defaults("pqn", architecture="sebulba")
    config.network, config.optimizer, config.agent = anakin.network, anakin.optimizer, anakin.agent
    config.env.name = "CartPole-v1"
    config.envs_per_thread = 16
    config.unroll_length = 64
    config.total_steps = anakin.total_steps
    return config
