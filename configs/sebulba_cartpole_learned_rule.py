"""Sebulba on envpool's CartPole-v1, trained by a learned update rule (LPG, `agent.name = "learned_rule"`): the
Podracer paper's rule "lifted and loaded in a Sebulba agent".

The rule is a saved meta-network, which must be given:

    podracer train --config configs/sebulba_cartpole_learned_rule.py --config.agent.rule_checkpoint=PATH

No meta-trained rule ships yet: a random one (docs/meta-learning.md, "Lifting
the rule") makes the run go, not learn. Otherwise as
configs/sebulba_cartpole_impala.py: two actor threads of 16 environments,
unroll length 20, separate 64-64 tanh policy and prediction torsos, Adam 5e-4.
"""

from podracer import defaults


def get_config():
    config = defaults("learned_rule", architecture="sebulba")
    config.env.name = "CartPole-v1"
    config.envs_per_thread = 16
    config.unroll_length = 20
    config.total_steps = 500_000
    config.policy_lag = 0
    config.network.shared_torso = False
    config.optimizer.learning_rate = 5e-4
    return config
