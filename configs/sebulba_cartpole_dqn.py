"""Sebulba DQN on envpool's CartPole-v1: the network, optimiser and agent of `anakin_cartpole_dqn` fed by actor threads.

Two actor threads of 8 environments unroll 16 steps (256 steps per update);
the learner adds them to its buffer and takes 32 gradient steps on batches of
128 sequences (one per 8 environment steps, as on Anakin). Epsilon decays
over the first 20% of 5.2e5 steps. Acting is one update behind (policy_lag 1),
which replay does not mind.
"""

import os

from podracer import defaults, load_config


def get_config():
    anakin = load_config(os.path.join(os.path.dirname(__file__), "anakin_cartpole_dqn.py"))
    config = defaults("dqn", architecture="sebulba")
    config.network, config.optimizer, config.agent = anakin.network, anakin.optimizer, anakin.agent
    config.env.name = "CartPole-v1"
    config.envs_per_thread = 8
    config.unroll_length = 16
    config.total_steps = 520_000
    config.log_every_updates = 40  # 640 steps per environment: windows long enough to see 500-step episodes end.
    config.agent.replay_ratio = 32
    config.agent.epsilon_fraction = 0.2
    return config
