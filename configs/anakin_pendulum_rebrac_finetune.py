"""Anakin ReBRAC fine-tuned online on gymnax's Pendulum-v1 from an offline ReBRAC run (Tarasov et al. 2023, Section 6).

Goes on from the run `configs/anakin_pendulum_rebrac.py` trained with
`--workdir runs/pendulum-rebrac`, with its networks, optimiser and both
cloning penalties, the replay buffer first holding that run's dataset
(`offline.start_from`, docs/offline.md); TD3's exploration noise of 0.1.
The environments, steps and replay of `configs/anakin_pendulum_iql_finetune.py`
(one gradient step per environment step, 20,000 steps), on batches of 256 as
the authors fine-tune. Needs the gymnax and offline extras:
pip install -e '.[gymnax,offline]'.
"""

import os

from podracer import load_config


def get_config():
    here = os.path.dirname(__file__)
    fields = {"offline.dataset": "", "offline.start_from": "runs/pendulum-rebrac"}
    config = load_config(os.path.join(here, "anakin_pendulum_rebrac.py"), fields)
    online = load_config(os.path.join(here, "anakin_pendulum_iql_finetune.py"))
    for field in ("num_envs", "unroll_length", "total_steps"):
        config[field] = online[field]
    config.evaluation.every_steps = online.evaluation.every_steps
    config.agent.update({field: online.agent[field] for field in ("replay_ratio", "buffer_size", "min_replay_size")})
    config.agent.batch_size = 256
    return config
