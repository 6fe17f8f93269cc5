"""Anakin CQL on a dataset of gymnax's Pendulum-v1 (Kumar et al. 2020), evaluated online as it learns.

SAC with CQL(H)'s regulariser: alpha 5, 10 sampled actions of each kind,
tau 0.005, gamma 0.99, batches of 256, Adam 3e-4, 256-256 ReLU networks.
`total_steps` counts gradient steps; every 2,000 of them the greedy policy
(tanh of the Gaussian's mean) plays 16 episodes. Each step evaluates the
critics at 30 sampled actions per transition, so it runs several times slower
than TD3+BC. Record the dataset first (docs/offline.md). Needs the gymnax and
offline extras: pip install -e '.[gymnax,offline]'.
"""

from podracer import defaults


def get_config():
    config = defaults("cql")
    config.env.name = "gymnax:Pendulum-v1"
    config.offline.dataset = "datasets/pendulum-medium-v0"
    config.total_steps = 20_000  # Gradient steps.
    config.log_records = 20
    config.evaluation.every_steps = 2_000
    config.evaluation.episodes = 16
    config.network.hidden_sizes = (256, 256)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 3e-4
    config.optimizer.max_grad_norm = 100.0  # CQL does not clip gradients; this only guards against blow-ups.
    return config
