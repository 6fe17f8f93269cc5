"""Anakin C51 on gymnax's MinAtar Breakout: everything of `anakin_minatar_breakout_dqn` but the agent.

C51 with "Revisiting Rainbow"'s MinAtar support (Obando-Ceron and Castro 2021):
51 atoms on [-100, 100]; DQN's one-step targets, copied target network,
replay and epsilon schedule. Needs the gymnax extra: pip install -e '.[gymnax]'.
"""

import os

from podracer import defaults, load_config
from podracer.config.loading import with_experiment_of


def get_config():
    dqn = load_config(os.path.join(os.path.dirname(__file__), "anakin_minatar_breakout_dqn.py"))
    config = with_experiment_of(defaults("c51"), dqn)
    config.agent.v_min, config.agent.v_max = -100.0, 100.0
    return config
