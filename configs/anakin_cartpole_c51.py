"""Anakin C51 on CartPole-v1, with everything of `anakin_cartpole_dqn` but the agent.

C51's categorical distribution over 51 atoms on [0, 100] (CartPole's
discounted returns at gamma 0.98 stay under 50) with DQN's double Q, 3-step
returns, Polyak-averaged target network, replay and epsilon schedule.
"""

import os

from podracer import defaults, load_config
from podracer.config.loading import with_experiment_of


def get_config():
    dqn = load_config(os.path.join(os.path.dirname(__file__), "anakin_cartpole_dqn.py"))
    config = with_experiment_of(defaults("c51"), dqn)
    config.agent.v_min, config.agent.v_max = 0.0, 100.0
    return config
