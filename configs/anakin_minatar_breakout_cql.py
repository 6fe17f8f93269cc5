"""Anakin discrete CQL on a dataset of gymnax's MinAtar Breakout (Kumar et al. 2020), evaluated online as it learns.

The Q-network of `anakin_minatar_breakout_pqn.py` (two dense layers of 128,
each with LayerNorm and ReLU, over the flattened 10x10x4 frame), double Q,
the target network moved 0.005 of the way each gradient step, alpha 1 (the
discrete CQL baselines use 1 to 4), batches of 256, Adam 3e-4, gamma 0.99.
`total_steps` counts gradient steps; every 10,000 of them the greedy policy
plays 32 episodes. Record the dataset first from a PQN run (docs/offline.md).
Needs the gymnax and offline extras: pip install -e '.[gymnax,offline]'.
"""

from podracer import defaults


def get_config():
    config = defaults("cql")
    config.env.name = "gymnax:Breakout-MinAtar"
    config.offline.dataset = "datasets/minatar_breakout-medium-replay-v0"
    config.total_steps = 100_000  # Gradient steps.
    config.log_records = 20
    config.evaluation.every_steps = 10_000
    config.evaluation.episodes = 32
    config.network.hidden_sizes = (128, 128)
    config.network.activation = "relu"
    config.network.layer_norm = True
    config.optimizer.learning_rate = 3e-4
    config.optimizer.max_grad_norm = 10.0
    config.agent.alpha = 1.0
    return config
