"""Anakin QMIX with GRU agents on MPE simple_spread (JaxMARL), with JaxMARL's baseline settings
(`baselines/QLearning/qmix_rnn.py`, `config/alg/ql_rnn_mpe.yaml`).

VDN's config (`anakin_mpe_spread_vdn.py`, which says how it maps the yaml)
with QMIX's mixer (Rashid et al. 2018): the agents' values mixed monotonically
by a network whose weights hypernetworks make from the global state (MPE's:
every agent's observation, concatenated), an embedding of 32, hypernetworks of
128, orthogonal initial weights of gain 0.001, as the yaml.
"""

import os

from podracer import defaults, load_config
from podracer.config.loading import with_experiment_of


def get_config():
    vdn = load_config(os.path.join(os.path.dirname(__file__), "anakin_mpe_spread_vdn.py"))
    config = with_experiment_of(defaults("qmix"), vdn)
    config.agent.mixer = "qmix"  # Its own: the shared field came over from VDN's config.
    config.agent.embedding_size = 32
    config.agent.hypernet_hidden_size = 128
    config.agent.mixer_init_scale = 0.001
    return config
