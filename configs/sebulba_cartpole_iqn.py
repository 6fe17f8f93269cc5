"""Sebulba IQN on envpool's CartPole-v1: everything of `sebulba_cartpole_dqn` but the agent.

Actor threads feed the learner's device buffer as for DQN; IQN's 32 sampled
quantile fractions for the online and the target network, 32 midpoints for
acting, the quantile Huber loss (kappa 1).
"""

import os

from podracer import defaults, load_config
from podracer.config.loading import with_experiment_of


def get_config():
    dqn = load_config(os.path.join(os.path.dirname(__file__), "sebulba_cartpole_dqn.py"))
    config = with_experiment_of(defaults("iqn", architecture="sebulba"), dqn)
    config.agent.num_atoms = 32
    return config
