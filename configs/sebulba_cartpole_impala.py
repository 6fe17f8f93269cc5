"""Sebulba IMPALA (V-trace) on envpool's CartPole-v1.

Two actor threads of 16 environments, unroll length 20, one update behind
(policy_lag 1, corrected by V-trace), Adam 1e-3, separate 64-64 tanh actor and
critic.
"""

from podracer.config import defaults


def get_config():
    config = defaults("impala", architecture="sebulba")
    config.env.name = "CartPole-v1"
    config.envs_per_thread = 16
    config.unroll_length = 20
    config.total_steps = 500_000
    config.network.shared_torso = False
    config.optimizer.learning_rate = 1e-3
    return config
