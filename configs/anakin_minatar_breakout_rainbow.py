"""Anakin Rainbow on gymnax's MinAtar Breakout: C51 with Rainbow's other parts on `anakin_minatar_breakout_c51`.

Rainbow (Hessel et al. 2018) as "Revisiting Rainbow" runs it on MinAtar
(Obando-Ceron and Castro 2021): C51's 51 atoms on [-100, 100], 3-step returns,
a prioritised buffer (priority exponent 0.5, importance exponent 0.4, each
sequence's priority its cross-entropy loss), double Q and dueling streams. The
replay, optimiser, target network and epsilon schedule are the DQN
experiment's. Noisy nets, Rainbow's sixth part, are an option:
`--config.agent.noisy_sigma=0.5 --config.agent.epsilon_start=0
--config.agent.epsilon_end=0` explores by them alone, as the paper does.
Needs the gymnax extra: pip install -e '.[gymnax]'.
"""

import os

from podracer import load_config


def get_config():
    config = load_config(os.path.join(os.path.dirname(__file__), "anakin_minatar_breakout_c51.py"))
    config.agent.n_step = 3
    config.agent.prioritised = True
    config.agent.priority_exponent = 0.5
    config.agent.importance_exponent = 0.4
    config.agent.double_q = True
    config.agent.dueling = True
    return config
