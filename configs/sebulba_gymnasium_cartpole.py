"""Sebulba PPO on Gymnasium's CartPole-v1, stepped in worker processes by gymnasium.vector.AsyncVectorEnv.

The experiment of `sebulba_cartpole_ppo` (CleanRL's hyperparameters and
512-step batch), with the environments run by Gymnasium instead of envpool:
any Gymnasium id works the same way, `gymnasium:ID`, including one your own
module registers (`gymnasium:my_package.envs:MyEnv-v0` imports the module in
each worker first). Each actor thread's 16 environments run in 16 worker
processes. Needs the gymnasium extra: pip install -e '.[gymnasium]'.
"""

import os

from podracer import load_config


def get_config():
    envpool_experiment = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sebulba_cartpole_ppo.py")
    return load_config(envpool_experiment, {"env.name": "gymnasium:CartPole-v1"})
