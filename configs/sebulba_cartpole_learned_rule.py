"""Sebulba on envpool's CartPole-v1, trained by a learned update rule (LPG, `agent.name = "learned_rule"`): the
Podracer paper's rule "lifted and loaded in a Sebulba agent".

The rule is a saved meta-network, which must be given:

    podracer train --config configs/sebulba_cartpole_learned_rule.py --config.agent.rule_checkpoint=PATH

No meta-trained rule ships yet: a random one (docs/meta-learning.md, "Lifting
the rule") makes the run go, not learn. Otherwise as
configs/sebulba_cartpole_impala.py: two actor threads of 16 environments,
unroll length 20, separate 64-64 tanh policy and prediction torsos, Adam 5e-4.
"""

import os

from podracer import load_config


def get_config():
    # The run's settings are that config's; the agent is LPG's, at its defaults.
    return load_config(
        os.path.join(os.path.dirname(__file__), "sebulba_cartpole_impala.py"), {"agent.name": "learned_rule"}
    )
