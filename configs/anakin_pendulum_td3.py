"""Anakin TD3 on gymnax's Pendulum-v1 (continuous torque in [-2, 2]).

MEASURED
"""

from podracer import defaults


def get_config():
    config = defaults("td3")
    config.env.name = "gymnax:Pendulum-v1"
    config.num_envs = 64
    config.unroll_length = 1
    config.total_steps = 102_400  # 1,600 updates of 64 steps: 8 episodes of each environment.
    config.network.hidden_sizes = (64, 64)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 2e-3
    config.optimizer.max_grad_norm = 100.0  # TD3 does not clip gradients; this only guards against blow-ups.
    config.agent.target_tau = 0.05
    config.agent.replay_ratio = 2
    config.agent.buffer_size = 100_000
    config.agent.min_replay_size = 2_000
    return config
