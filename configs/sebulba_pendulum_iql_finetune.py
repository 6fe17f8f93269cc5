"""Sebulba IQL fine-tuned online on Gymnasium's Pendulum-v1 from an offline IQL run trained on Anakin.

`configs/anakin_pendulum_iql_finetune.py` on host environments: Gymnasium's
Pendulum-v1 observes and acts as gymnax's, so the run goes on from the
offline run `configs/anakin_pendulum_iql.py` trained with
`--workdir runs/pendulum-iql`, its dataset first in the learner's replay
buffer (`offline.start_from`, docs/offline.md). 2 actor threads of 4
environments unroll 8 steps; each update takes 64 gradient steps on batches
of 256, one per environment step, for 20,000 steps. Needs the offline extra.
"""

import os

from podracer import defaults, load_config


def get_config():
    anakin = load_config(os.path.join(os.path.dirname(__file__), "anakin_pendulum_iql_finetune.py"))
    config = defaults("iql", architecture="sebulba")
    config.env.name = "gymnasium:Pendulum-v1"
    for field in ("network", "optimizer", "offline", "evaluation"):
        config[field] = anakin[field]
    config.agent.update({name: anakin.agent[name] for name in ("expectile", "temperature", "buffer_size")})
    config.agent.min_replay_size = anakin.agent.min_replay_size
    config.agent.replay_ratio = 64  # One gradient step per environment step.
    config.envs_per_thread = 4
    config.unroll_length = 8
    config.total_steps = anakin.total_steps
    return config
