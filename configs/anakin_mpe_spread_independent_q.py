"""Anakin independent Q-learning with GRU agents on MPE simple_spread (JaxMARL), with JaxMARL's baseline settings
(`baselines/QLearning/iql_rnn.py`, `config/alg/ql_rnn_mpe.yaml`).

VDN's config (`anakin_mpe_spread_vdn.py`, which says how it maps the yaml)
without a mixer: each agent learns its own Q-values from its own reward and
discount, as the script does, so the rewards are not scaled.
"""

import os

from podracer import defaults, load_config
from podracer.config.loading import with_experiment_of


def get_config():
    vdn = load_config(os.path.join(os.path.dirname(__file__), "anakin_mpe_spread_vdn.py"))
    config = with_experiment_of(defaults("independent_q"), vdn)
    config.agent.mixer = "none"  # Its own: the shared field came over from VDN's config.
    config.agent.reward_scale = 1.0  # Each agent's own reward, unscaled.
    return config
