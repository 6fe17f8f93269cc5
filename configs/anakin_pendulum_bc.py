"""Anakin behaviour cloning on a dataset of gymnax's Pendulum-v1: the baseline the offline agents are measured against.

A deterministic actor regressed onto the dataset's actions (mean squared error
in the unit box), 256-256 ReLU, Adam 3e-4, batches of 256; the other offline
agents' Pendulum configs start from this one. `total_steps` counts gradient steps; every 2,000 of them
the policy plays 16 episodes. Record the dataset first (docs/offline.md).
Needs the gymnax and offline extras: pip install -e '.[gymnax,offline]'.
"""

from podracer import defaults


def get_config():
    config = defaults("bc")
    config.env.name = "gymnax:Pendulum-v1"
    config.offline.dataset = "datasets/pendulum-medium-v0"
    config.total_steps = 20_000  # Gradient steps.
    config.log_records = 20
    config.evaluation.every_steps = 2_000
    config.evaluation.episodes = 16
    config.network.hidden_sizes = (256, 256)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 3e-4
    config.optimizer.max_grad_norm = 100.0  # The papers' agents do not clip gradients; this only guards blow-ups.
    return config
