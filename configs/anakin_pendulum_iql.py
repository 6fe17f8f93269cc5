"""Anakin IQL on a dataset of gymnax's Pendulum-v1 (Kostrikov et al. 2022), evaluated online as it learns.

The paper's locomotion settings: expectile 0.7, temperature 3.0, tau 0.005,
gamma 0.99, batches of 256, Adam 3e-4, 256-256 ReLU networks. `total_steps`
counts gradient steps; every 2,000 of them the greedy policy (the Gaussian's
mean) plays 16 episodes. Record the dataset first (docs/offline.md). Needs the
gymnax and offline extras: pip install -e '.[gymnax,offline]'.
"""

from podracer import defaults


def get_config():
    config = defaults("iql")
    config.env.name = "gymnax:Pendulum-v1"
    config.offline.dataset = "datasets/pendulum-medium-v0"
    config.total_steps = 20_000  # Gradient steps.
    config.log_records = 20
    config.evaluation.every_steps = 2_000
    config.evaluation.episodes = 16
    config.network.hidden_sizes = (256, 256)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 3e-4
    config.optimizer.max_grad_norm = 100.0  # IQL does not clip gradients; this only guards against blow-ups.
    return config
