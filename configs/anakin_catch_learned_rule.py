"""Anakin on Catch, trained by a learned update rule (LPG, `agent.name = "learned_rule"`) instead of a hand-written loss.

The rule is a saved meta-network, which must be given:

    podracer train --config configs/anakin_catch_learned_rule.py --config.agent.rule_checkpoint=PATH

No meta-trained rule ships yet: a random one (docs/meta-learning.md, "Lifting
the rule") makes the run go, not learn. Otherwise as configs/anakin_catch.py.
"""

from podracer import defaults


def get_config():
    config = defaults("learned_rule")
    config.env.name = "catch"
    config.env.kwargs.rows = 10
    config.env.kwargs.columns = 5
    config.cpu_devices = 2
    config.num_envs = 512
    config.unroll_length = 16
    config.total_steps = 1_000_000
    config.optimizer.learning_rate = 3e-3
    return config
