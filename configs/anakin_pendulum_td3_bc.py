"""Anakin TD3+BC on a dataset of gymnax's Pendulum-v1 (Fujimoto and Gu 2021), evaluated online as it learns.

`configs/anakin_pendulum_bc.py` (its dataset, 256-256 ReLU networks, batches
of 256, Adam 3e-4, 20,000 gradient steps, 16 evaluation episodes every
2,000) with TD3+BC's own settings at the paper's values: alpha 2.5, policy
delay 2, target smoothing noise 0.2 clipped at 0.5, tau 0.005, gamma 0.99.
Record the dataset first (docs/offline.md). Needs the gymnax and offline
extras: pip install -e '.[gymnax,offline]'.
"""

import os

from podracer import load_config


def get_config():
    config = load_config(os.path.join(os.path.dirname(__file__), "anakin_pendulum_bc.py"), {"agent.name": "td3_bc"})
    return config
