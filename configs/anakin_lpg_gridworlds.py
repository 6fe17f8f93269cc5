"""LPG meta-training on Anakin: one learned update rule from a population of agents on LPG's grid worlds and chains.

    podracer meta-train --config configs/anakin_lpg_gridworlds.py --workdir DIR

The rule is written to DIR/rule (train an agent with it: `agent.name =
"learned_rule"`, `agent.rule_checkpoint=DIR/rule`). Oh et al. 2020
("Discovering Reinforcement Learning Algorithms", Appendix) meta-train an LSTM
of 256 units with m = 30 over a population of hundreds of agents on every
variant of the tabular and random grid worlds and delayed chains, with
lifetimes of millions of steps. Scaled down for a 2-core CPU: 16 agents (8
per device on its two XLA:CPU devices, the most that 6, 4 and 6 members divide
into) on three variants, 4 environments each, an LSTM of 32 units,
lifetimes of 40 to 80 inner updates of 16 steps. On a TPU slice or GPU, raise
the members per entry (a multiple of the devices), `meta.hidden_size` and
`meta.lifetime`.
"""

from podracer.experiment.meta_train import defaults


def get_config():
    config = defaults()
    config.unroll_length = 16
    config.network.hidden_sizes = (32,)
    config.optimizer.learning_rate = 1e-2  # The agents' Adam: short lifetimes need fast learners.
    config.agent.prediction_size = 30
    config.meta.environments = (
        ("lpg_tabular", {"variant": "dense"}, 6),
        ("lpg_random_grid", {"variant": "small"}, 4),
        ("lpg_delayed_chain", {"variant": "short"}, 6),
    )
    config.meta.envs_per_member = 4
    config.meta.inner_updates = 5
    config.meta.lifetime = (40, 80)
    config.meta.updates = 300
    config.meta.updates_per_dispatch = 10
    config.checkpoint.every_updates = 50
    return config
