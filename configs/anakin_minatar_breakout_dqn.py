"""Anakin DQN on gymnax's MinAtar Breakout, with the settings of "Revisiting Rainbow" (Obando-Ceron and Castro 2021).

Their MinAtar DQN on podracer's replay: a buffer of 100,000 steps, learning
from 1,000 steps on, Adam 1e-4 (eps 3.125e-4), gamma 0.99, the target network
copied every 1,000 gradient steps, the Huber loss, one-step targets without
double Q. Two changes make a run fit this project's 2-core machine: one
gradient step on 64 sampled transitions per 8 environment steps (theirs: 32
per 4, the same transitions per step), and 500,000 steps with epsilon from 1
to 0.01 over the first 100,000 (theirs: 10 million, and 250,000). The network
is the 128-128 ReLU MLP over the flattened 10x10x4 frame that
`anakin_minatar_breakout_pqn` uses (their small CNN runs about 20 times
slower on XLA:CPU); 16 environments x 8 steps fill the buffer. C51, QR-DQN
and Rainbow run on the same experiment (`anakin_minatar_breakout_c51`, ...).
Needs the gymnax extra: pip install -e '.[gymnax]'.
"""

from podracer import defaults


def get_config():
    config = defaults("dqn")
    config.env.name = "gymnax:Breakout-MinAtar"
    config.num_envs = 16
    config.unroll_length = 8
    config.total_steps = 499_968  # 3,906 updates of 16 x 8 steps.
    config.network.hidden_sizes = (128, 128)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 1e-4
    config.optimizer.eps = 3.125e-4
    config.optimizer.max_grad_norm = 10.0
    config.agent.gamma = 0.99
    config.agent.n_step = 1
    config.agent.double_q = False
    config.agent.buffer_size = 100_000
    config.agent.min_replay_size = 1_024
    config.agent.batch_size = 64
    config.agent.replay_ratio = 16  # One gradient step per 8 environment steps.
    config.agent.target_update_period = 1_000
    config.agent.target_tau = 1.0
    config.agent.epsilon_end = 0.01
    config.agent.epsilon_fraction = 0.2  # 100,000 steps.
    return config
