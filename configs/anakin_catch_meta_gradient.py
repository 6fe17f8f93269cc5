"""Anakin actor-critic on Catch learning its discount and its lambda online by meta-gradients (Xu et al. 2018).

`configs/anakin_catch.py`, with gamma and lambda as meta-parameters
(`podracer.agents.meta_gradient_rl`): each update first moves them by the
meta-gradient of the validation objective (gamma' = 0.99, lambda' = 1) on
the new trajectory, then takes the usual step. Both start at the
actor-critic's defaults (0.99 and 0.9); the run records them as `gamma` and
`td_lambda`. With `--config.agent.meta_gradient.learning_rate=0` it is the
plain config's run, bitwise.
"""

from podracer import defaults


def get_config():
    config = defaults("actor_critic")
    config.env.name = "catch"
    config.env.kwargs.rows = 10
    config.env.kwargs.columns = 5
    config.cpu_devices = 2
    config.num_envs = 512
    config.unroll_length = 16
    config.total_steps = 1_000_000
    config.optimizer.learning_rate = 3e-3
    config.agent.meta_gradient.learn = ("gamma", "td_lambda")
    config.agent.meta_gradient.learning_rate = 3e-3
    return config
