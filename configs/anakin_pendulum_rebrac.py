"""Anakin ReBRAC on a dataset of gymnax's Pendulum-v1 (Tarasov et al. 2023), evaluated online as it learns.

`configs/anakin_pendulum_bc.py` (its dataset, 256-256 ReLU networks and
evaluation) with ReBRAC's settings from the paper: LayerNorm in every hidden
layer, batches of 1,024, Adam 1e-3, policy delay 2, target smoothing noise
0.2 clipped at 0.5, tau 0.005, gamma 0.99, and cloning penalties of 0.01 in
the actor and the critic (the paper tunes both per dataset). Record the
dataset first (docs/offline.md). Needs the gymnax and offline extras:
pip install -e '.[gymnax,offline]'.
"""

import os

from podracer import load_config


def get_config():
    config = load_config(os.path.join(os.path.dirname(__file__), "anakin_pendulum_bc.py"), {"agent.name": "rebrac"})
    config.network.layer_norm = True
    config.optimizer.learning_rate = 1e-3
    return config
