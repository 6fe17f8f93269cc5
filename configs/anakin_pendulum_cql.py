"""Anakin CQL on a dataset of gymnax's Pendulum-v1 (Kumar et al. 2020), evaluated online as it learns.

`configs/anakin_pendulum_bc.py` (its dataset, networks, batch, optimiser and
evaluation) with SAC and CQL(H)'s regulariser: alpha 5, 10 sampled actions of
each kind, tau 0.005, gamma 0.99. Each step evaluates the critics at 30
sampled actions per transition, so it runs several times slower than
TD3+BC. Record the dataset first (docs/offline.md). Needs the gymnax and
offline extras: pip install -e '.[gymnax,offline]'.
"""

import os

from podracer import load_config


def get_config():
    config = load_config(os.path.join(os.path.dirname(__file__), "anakin_pendulum_bc.py"), {"agent.name": "cql"})
    return config
