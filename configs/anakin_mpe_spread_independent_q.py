"""Anakin independent Q-learning with GRU agents on MPE simple_spread (JaxMARL), with JaxMARL's baseline settings
(`baselines/QLearning/iql_rnn.py`, `config/alg/ql_rnn_mpe.yaml`).

VDN's config (`anakin_mpe_spread_vdn.py`, which says how it maps the yaml)
without a mixer: each agent learns its own Q-values from its own reward and
discount, as the script does, so the rewards are not scaled.
"""

from podracer import defaults


def get_config():
    config = defaults("independent_q")
    config.env.name = "jaxmarl:MPE_simple_spread_v3"
    config.num_envs = 8
    config.unroll_length = 26
    config.total_steps = 9_999_808  # 48,076 updates of 8 x 26 steps: JaxMARL's int(1e7 / 26 / 8).
    config.agent.gamma = 0.9
    config.agent.sequence_length = 26
    config.agent.buffer_size = 130_000
    config.agent.min_replay_size = 10_000
    config.agent.batch_size = 32
    config.agent.target_update_period = 200
    config.network.hidden_sizes = (64,)
    config.network.activation = "relu"
    config.network.core = "gru"
    config.network.core_size = 64
    config.optimizer.name = "radam"
    config.optimizer.learning_rate = 5e-3
    config.optimizer.max_grad_norm = 25.0
    config.optimizer.anneal_lr = True
    config.updates_per_dispatch = 500
    return config
