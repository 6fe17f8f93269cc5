"""Anakin MAPPO on MPE simple_spread (JaxMARL) with JaxMARL's baseline settings (`baselines/MAPPO/mappo_rnn_mpe.py`).

The critic reads the global state, every agent's observation side by side
(JaxMARL's `MPEWorldStateWrapper`), and the policy each agent's own. As
`config/mappo_homogenous_rnn_mpe.yaml`: 16 environments x 128 steps, 4 epochs
x 4 minibatches of whole agent sequences, Adam 2e-3 annealed to 0, gradients
clipped at 0.5; actor and critic each Dense 128 (ReLU), a GRU of 128 and
Dense 128 (ReLU) before their head, shared by the agents; 1e7 environment
steps (4,882 updates). Unlike the script, one optimiser steps both networks
on the summed loss (one global-norm clip over both), and the agents read
their one-hot id. podracer reports the agents' mean return, JaxMARL three
times it (`docs/multi-agent.md`).
"""

from podracer import defaults


def get_config():
    config = defaults("mappo")
    config.env.name = "jaxmarl:MPE_simple_spread_v3"
    config.num_envs = 16
    config.unroll_length = 128
    config.total_steps = 9_998_336  # 4,882 updates of 16 x 128 steps: JaxMARL's int(1e7 / 128 / 16).
    config.network.hidden_sizes = (128,)
    config.network.activation = "relu"
    config.network.core = "gru"
    config.network.core_size = 128
    config.network.head_hidden_sizes = (128,)
    config.optimizer.learning_rate = 2e-3
    config.optimizer.anneal_lr = True
    config.updates_per_dispatch = 50
    return config
