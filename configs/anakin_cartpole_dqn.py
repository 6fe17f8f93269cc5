"""Anakin DQN on CartPole-v1: double Q-learning, 3-step returns, a Polyak-averaged target network.

8 environments x 2 steps per update, each followed by 2 gradient steps on
batches of 128 sequences sampled uniformly from a buffer of 50,000 steps (one
gradient step per 8 environment steps, near CleanRL's 10), learning from 1,000
steps on; a 128-128 ReLU Q-network, Adam 2.5e-4, gamma 0.98; the target
network moves 0.005 of the way to the online one after every gradient step;
epsilon decays from 1 to 0.01 over the first 30% of the run.
"""

from podracer import defaults


def get_config():
    config = defaults("dqn")
    config.env.name = "cartpole"
    config.num_envs = 8
    config.unroll_length = 2
    config.total_steps = 400_000
    config.network.activation = "relu"
    config.network.hidden_sizes = (128, 128)
    config.optimizer.learning_rate = 2.5e-4
    config.optimizer.max_grad_norm = 10.0
    config.agent.gamma = 0.98
    config.agent.n_step = 3
    config.agent.buffer_size = 50_000
    config.agent.replay_ratio = 2
    config.agent.target_update_period = 1
    config.agent.target_tau = 0.005
    config.agent.epsilon_end = 0.01
    config.agent.epsilon_fraction = 0.3
    return config
