"""Anakin PPO on CartPole-v1 with CleanRL's standard hyperparameters (ppo.py defaults).

4 environments x 128 steps, 4 epochs x 4 minibatches, Adam 2.5e-4 annealed to 0,
separate 64-64 tanh actor and critic, 5e5 environment steps: 976 updates.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo")
    config.env.name = "cartpole"
    config.num_envs = 4
    config.unroll_length = 128
    config.total_steps = 499_712  # 976 updates of 4 x 128 steps: CleanRL's int(5e5 / 512).
    config.network.shared_torso = False
    config.optimizer.learning_rate = 2.5e-4
    config.optimizer.anneal_lr = True
    # 61 updates (4 ms each on the 2-core machine) a dispatch, not the 8 of 100 records: a dispatch's round trip
    # and start cost about 10% of 8 updates (docs/benchmarks.md, small-batch PPO).
    config.log_records = 16
    return config
