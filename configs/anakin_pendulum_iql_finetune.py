"""Anakin IQL fine-tuned online on gymnax's Pendulum-v1 from an offline IQL run (Kostrikov et al. 2022, Section 5.3).

Goes on from the run `configs/anakin_pendulum_iql.py` trained with
`--workdir runs/pendulum-iql`, with its networks, optimiser and IQL's
settings, the replay buffer first holding that run's dataset (`offline.start_from`,
docs/offline.md). 4 environments unroll 8 steps and each update takes 32
gradient steps on batches of 256: one per environment step, as the paper's
fine-tuning does, for 20,000 steps (100 episodes). Needs the gymnax and
offline extras: pip install -e '.[gymnax,offline]'.
"""

import os

from podracer import load_config


def get_config():
    offline = os.path.join(os.path.dirname(__file__), "anakin_pendulum_iql.py")
    config = load_config(offline, {"offline.dataset": "", "offline.start_from": "runs/pendulum-iql"})
    config.num_envs = 4
    config.unroll_length = 8
    config.total_steps = 20_000  # Environment steps.
    config.agent.replay_ratio = 32  # One gradient step per environment step.
    config.agent.buffer_size = 100_000  # The dataset's rows and every online step.
    config.agent.min_replay_size = 1_000
    config.evaluation.every_steps = 2_000
    return config
