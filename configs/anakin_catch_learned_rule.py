"""Anakin on Catch, trained by a learned update rule (LPG, `agent.name = "learned_rule"`) instead of a hand-written loss.

The rule is a saved meta-network, which must be given:

    podracer train --config configs/anakin_catch_learned_rule.py --config.agent.rule_checkpoint=PATH

No meta-trained rule ships yet: a random one (docs/meta-learning.md, "Lifting
the rule") makes the run go, not learn. Otherwise as configs/anakin_catch.py.
"""

import os

from podracer import load_config


def get_config():
    # The run's settings are that config's; the agent is LPG's, at its defaults.
    return load_config(os.path.join(os.path.dirname(__file__), "anakin_catch.py"), {"agent.name": "learned_rule"})
