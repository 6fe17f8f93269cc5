"""Sebulba PPO on Gymnasium's CartPole-v1, stepped in worker processes by gymnasium.vector.AsyncVectorEnv.

The same experiment as `sebulba_cartpole_ppo` (CleanRL's hyperparameters and
512-step batch), with the environments run by Gymnasium instead of envpool:
any Gymnasium id works the same way, `gymnasium:ID`, including one your own
module registers (`gymnasium:my_package.envs:MyEnv-v0` imports the module in
each worker first). Each actor thread's 16 environments run in 16 worker
processes. Needs the gymnasium extra: pip install -e '.[gymnasium]'.
"""

from podracer.config import defaults


def get_config():
    config = defaults("ppo", architecture="sebulba")
    config.env.name = "gymnasium:CartPole-v1"
    config.envs_per_thread = 16
    config.unroll_length = 16
    config.total_steps = 500_000
    config.network.shared_torso = False
    config.optimizer.learning_rate = 2.5e-4
    config.optimizer.anneal_lr = True
    return config
