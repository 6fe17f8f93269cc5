"""Anakin QR-DQN on CartPole-v1, with everything of `anakin_cartpole_dqn` but the agent.

51 quantiles at fixed fractions, the quantile Huber loss (kappa 1), with DQN's
double Q, 3-step returns, Polyak-averaged target network, replay and epsilon
schedule.
"""

import os

from podracer import defaults, load_config
from podracer.config.loading import with_experiment_of


def get_config():
    dqn = load_config(os.path.join(os.path.dirname(__file__), "anakin_cartpole_dqn.py"))
    config = with_experiment_of(defaults("qr_dqn"), dqn)
    config.agent.num_atoms = 51
    return config
