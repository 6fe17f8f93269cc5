"""Anakin PQN on gymnax's MinAtar Breakout with purejaxql's MinAtar settings.

purejaxql's `purejaxql/config/alg/pqn_minatar.yaml` (Gallici et al. 2025's
code): 128 environments x 32 steps per update, 2 epochs x 32 minibatches,
RAdam 5e-4 annealed linearly to 0, gradient norm 10, gamma 0.99, lambda 0.65,
epsilon from 1 to 0.05 over the first 10% of the run, 1e7 steps (2,441
updates). The network is the Q-network of purejaxql's `pqn_gymnax.py` (which
trains any gymnax task, MinAtar's too) at its defaults: two dense layers of
128, each with LayerNorm and ReLU, over the flattened 10x10x4 frame.
purejaxql's `pqn_minatar.py` puts a CNN there instead (conv 16 3x3, LayerNorm,
ReLU, then the dense 128); podracer's nearest is the multi-input torso,
`--config.network.torso=multi_input --config.network.channels="(16,)"
--config.network.hidden_sizes="(128,)"` (a SAME conv and a 2x2 max-pool),
which XLA:CPU runs about 20x slower (1,000 steps/s here against 38,000 with
one dense layer). Here (one CPU device, the 2-core machine shared with other
work) the whole budget takes 7.5 minutes (22,000 steps/s) and ends at 37 over
the last 100 episodes, epsilon still 0.05 (4 after 1e5 steps; 19 after 2.6e6).
Needs the gymnax extra: pip install -e '.[gymnax]'.
"""

from podracer import defaults


def get_config():
    config = defaults("pqn")
    config.env.name = "gymnax:Breakout-MinAtar"
    config.num_envs = 128
    config.unroll_length = 32
    config.total_steps = 9_998_336  # 2,441 updates of 128 x 32 steps: int(1e7 / 4096).
    config.network.hidden_sizes = (128, 128)
    config.network.activation = "relu"
    config.network.layer_norm = True
    config.optimizer.name = "radam"
    config.optimizer.learning_rate = 5e-4
    config.optimizer.anneal_lr = True
    config.optimizer.max_grad_norm = 10.0
    config.optimizer.eps = 1e-8
    config.agent.td_lambda = 0.65
    config.agent.num_epochs = 2
    config.agent.num_minibatches = 32
    config.agent.epsilon_end = 0.05
    config.agent.epsilon_fraction = 0.1
    return config
