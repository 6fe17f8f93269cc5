"""Anakin SAC on MuJoCo Playground's CartpoleBalance: 953 over the last 100 episodes in 400,000 steps.

The network, optimiser and SAC settings of `anakin_pendulum_sac` (rejax's
Pendulum SAC sized for a CPU: batches of 256, 64-64 ReLU networks, Adam
2e-3, Polyak tau 0.02, 2 gradient steps per update of 64 environments x 1
step, a 100,000-step buffer, learning from 2,000 steps on), on MuJoCo
physics (MJX, the adapter's default) under Anakin. Rewards are in [0, 1]
per step and episodes 1,000 steps long, so 1,000 is the maximum return.

On the 2-core CI machine, seed 0's waves of 64 episodes score 363, 528, 700,
975, 967 and 939 (the last two are the last 100 episodes), in 77 s, of which
57 s compiling the physics and the agent (`anakin_playground_ppo` reaches
about 990 with 2M steps). Needs the playground extra: pip install -e '.[playground]'.
"""

import os

from podracer import defaults, load_config


def get_config():
    pendulum = load_config(os.path.join(os.path.dirname(__file__), "anakin_pendulum_sac.py"))
    config = defaults("sac")
    config.network, config.optimizer, config.agent = pendulum.network, pendulum.optimizer, pendulum.agent
    config.env.name = "playground:CartpoleBalance"
    config.num_envs = 64
    config.unroll_length = 1
    config.total_steps = 400_000  # 6,250 updates of 64 steps: 6 episodes of 1,000 steps (and a reset step) each.
    return config
