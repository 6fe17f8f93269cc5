"""Anakin ReBRAC on a dataset of gymnax's Pendulum-v1 (Tarasov et al. 2023), evaluated online as it learns.

The paper's settings: LayerNorm in every hidden layer, batches of 1,024, Adam
1e-3, policy delay 2, target smoothing noise 0.2 clipped at 0.5, tau 0.005,
gamma 0.99, 256-256 ReLU networks, and cloning penalties of 0.01 in the actor
and the critic (the paper tunes both per dataset). `total_steps` counts gradient steps; every 2,000 of
them the greedy policy plays 16 episodes. Record the dataset first
(docs/offline.md): a TD3 run, then `podracer collect`. Needs the gymnax and
offline extras: pip install -e '.[gymnax,offline]'.
"""

from podracer import defaults


def get_config():
    config = defaults("rebrac")
    config.env.name = "gymnax:Pendulum-v1"
    config.offline.dataset = "datasets/pendulum-medium-v0"
    config.total_steps = 20_000  # Gradient steps.
    config.log_records = 20
    config.evaluation.every_steps = 2_000
    config.evaluation.episodes = 16
    config.network.hidden_sizes = (256, 256)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 1e-3
    config.optimizer.max_grad_norm = 100.0  # ReBRAC does not clip gradients; this only guards against blow-ups.
    return config
