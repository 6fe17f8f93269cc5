"""Anakin actor-critic on Catch learning its discount and its lambda online by meta-gradients (Xu et al. 2018).

`configs/anakin_catch.py`, with gamma and lambda as meta-parameters
(`podracer.agents.meta.meta_gradient_rl`): each update first moves them by the
meta-gradient of the validation objective (gamma' = 0.99, lambda' = 1) on
the new trajectory, then takes the usual step. Both start at the
actor-critic's defaults (0.99 and 0.9); the run records them as `gamma` and
`td_lambda`. With `--config.agent.meta_gradient.learning_rate=0` it is the
plain config's run, bitwise.
"""

import os

from podracer import load_config


def get_config():
    config = load_config(os.path.join(os.path.dirname(__file__), "anakin_catch.py"))
    config.agent.meta_gradient.learn = ("gamma", "td_lambda")
    config.agent.meta_gradient.learning_rate = 3e-3
    return config
