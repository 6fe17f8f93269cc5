"""Anakin PQN on CartPole-v1 with purejaxql's CartPole settings.

Every setting is purejaxql's `purejaxql/config/alg/pqn_cartpole.yaml` (Gallici
et al. 2025's code): 32 environments x 64 steps per update, 4 epochs x 16
minibatches, a 256-256 ReLU Q-network with LayerNorm before each activation,
RAdam 1e-4 annealed linearly to 0, gradient norm 10, gamma 0.99, lambda 0.95,
rewards scaled by 0.1, epsilon from 1 to 0.2 over the first 20% of the run,
5e5 steps (244 updates). podracer's own pure-JAX CartPole (truncated at 500
steps, where the target bootstraps; purejaxql's gymnax CartPole treats the
time limit as an end). Here (one CPU device, the 2-core machine shared with
other work) it ends at 476 over the last 100 episodes with epsilon still 0.2
(the last records at 485-500), in 28 s, 20 of them compiling. With epsilon
ending at 0.05, RAdam 1e-3 and a 64-64 network, 1.5e5 steps end at 486-500
(seeds 0-3): `tests/anakin/test_pqn.py`.
"""

from podracer import defaults


def get_config():
    config = defaults("pqn")
    config.env.name = "cartpole"
    config.num_envs = 32
    config.unroll_length = 64
    config.total_steps = 499_712  # 244 updates of 32 x 64 steps: int(5e5 / 2048).
    config.network.hidden_sizes = (256, 256)
    config.network.activation = "relu"
    config.network.layer_norm = True
    config.optimizer.name = "radam"
    config.optimizer.learning_rate = 1e-4
    config.optimizer.anneal_lr = True
    config.optimizer.max_grad_norm = 10.0
    config.optimizer.eps = 1e-8
    config.agent.td_lambda = 0.95
    config.agent.num_epochs = 4
    config.agent.num_minibatches = 16
    config.agent.epsilon_end = 0.2
    config.agent.epsilon_fraction = 0.2
    config.agent.reward_scale = 0.1
    return config
