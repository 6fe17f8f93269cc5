"""Anakin PPO on gymnax's MinAtar Breakout with PureJaxRL's MinAtar hyperparameters.

PureJaxRL's `examples/brax_minatar.ipynb` (tuned for gymnax's MinAtar games):
64 environments x 128 steps, 4 epochs x 8 minibatches, Adam 5e-3 annealed to
0, gradient norm 0.5, separate 64-64 ReLU actor and critic over the flattened
10x10x4 frame, entropy 0.01, 1e7 steps (1,220 updates, 20 dispatches of 61).
Needs the gymnax extra: pip install -e '.[gymnax]'.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo")
    config.env.name = "gymnax:Breakout-MinAtar"
    config.num_envs = 64
    config.unroll_length = 128
    config.total_steps = 9_994_240  # 1,220 updates of 64 x 128 steps: int(1e7 / 8192).
    config.network.shared_torso = False
    config.network.activation = "relu"
    config.optimizer.learning_rate = 5e-3
    config.optimizer.anneal_lr = True
    config.agent.num_minibatches = 8
    return config
