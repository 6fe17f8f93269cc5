"""Anakin QR-DQN on gymnax's MinAtar Breakout: everything of `anakin_minatar_breakout_dqn` but the agent.

QR-DQN-1 (Dabney et al. 2018a): 200 quantiles, the quantile Huber loss with
kappa 1; DQN's one-step targets, copied target network, replay and epsilon
schedule. Needs the gymnax extra: pip install -e '.[gymnax]'.
"""

import os

from podracer import defaults, load_config
from podracer.config.loading import with_experiment_of


def get_config():
    dqn = load_config(os.path.join(os.path.dirname(__file__), "anakin_minatar_breakout_dqn.py"))
    return with_experiment_of(defaults("qr_dqn"), dqn)
