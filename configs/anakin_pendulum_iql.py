"""Anakin IQL on a dataset of gymnax's Pendulum-v1 (Kostrikov et al. 2022), evaluated online as it learns.

`configs/anakin_pendulum_bc.py` (its dataset, networks, batch, optimiser and
evaluation) with IQL's locomotion settings from the paper: expectile 0.7,
temperature 3.0, tau 0.005, gamma 0.99. Record the dataset first
(docs/offline.md). Needs the gymnax and offline extras:
pip install -e '.[gymnax,offline]'.
"""

import os

from podracer import load_config


def get_config():
    config = load_config(os.path.join(os.path.dirname(__file__), "anakin_pendulum_bc.py"), {"agent.name": "iql"})
    return config
