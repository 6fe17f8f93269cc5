"""Anakin PPO with the Gaussian head on gymnax's Pendulum-v1 (continuous torque in [-2, 2]).

32 environments x 64 steps (2,048 per update), 4 epochs x 8 minibatches,
Adam 1e-3 annealed to 0, gradient norm 1.0, separate 64-64 tanh actor and
critic, gamma 0.95 for the 200-step episodes, no entropy bonus, observations
normalised and rewards scaled by running statistics, 1e6 steps. Its greedy
policy (the Gaussian's mean) scores -155 to -178 over 4,096 episodes on seeds
0-3, mean -164 (the SB3 zoo's PPO scores -172, TD3 -152, SAC -157; gymnax-blines'
PPO reports -130). Gamma 0.99, 128-unit layers or 10 epochs score the same. With gymnax-blines' shorter unroll (32 x 16 steps) the same
run stalls near -330; with Adam 3e-4 it needs the whole 1e6 steps to reach -165.
Needs the gymnax extra: pip install -e '.[gymnax]'.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo")
    config.env.name = "gymnax:Pendulum-v1"
    config.num_envs = 32
    config.unroll_length = 64
    config.total_steps = 999_424  # 488 updates of 32 x 64 steps.
    config.network.shared_torso = False
    config.optimizer.learning_rate = 1e-3
    config.optimizer.anneal_lr = True
    config.optimizer.max_grad_norm = 1.0
    config.agent.gamma = 0.95
    config.agent.num_minibatches = 8
    config.agent.entropy_cost = 0.0
    config.agent.normalize_observations = True
    config.agent.scale_rewards = True
    return config
