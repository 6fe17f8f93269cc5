"""Anakin recurrent PPO on CartPole-v1 with PureJaxRL's `ppo_rnn.py` set-up, for the benchmark against it.

PureJaxRL's `purejaxrl/ppo_rnn.py` `__main__`: 4 environments x 128 steps, 4
epochs x 4 minibatches of whole environments (each replaying its 128-step
sequence from its stored GRU state), Adam 2.5e-4 annealed to 0, clipping 0.2
(value clipped too), GAE lambda 0.95, entropy 0.01, 5e5 environment steps. Its
network: Dense(128) ReLU embedding -> GRU(128) -> actor and critic heads of
one Dense(128) ReLU layer each. `python -m scripts.compare_purejaxrl
--task cartpole_rnn` times the two side by side, on podracer's own
pure-JAX CartPole against gymnax's.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo")
    config.env.name = "cartpole"
    config.num_envs = 4
    config.unroll_length = 128
    config.total_steps = 499_712  # 976 updates of 4 x 128 steps: PureJaxRL's int(5e5) // 128 // 4.
    config.network.torso = "mlp"
    config.network.hidden_sizes = (128,)
    config.network.activation = "relu"
    config.network.shared_torso = True
    config.network.core = "gru"
    config.network.core_size = 128
    config.network.head_hidden_sizes = (128,)
    config.optimizer.learning_rate = 2.5e-4
    config.optimizer.anneal_lr = True
    return config
