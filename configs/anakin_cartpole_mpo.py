"""Anakin MPO on CartPole-v1: a categorical policy, its E-step exact over the two actions, from a replay buffer.

`configs/anakin_cartpole_dqn.py`'s replay and networks: 8 environments x 2
steps per update, each followed by 2 gradient steps on batches of 128
transitions sampled uniformly from a buffer of 50,000 steps, learning from
1,000 steps on; 128-128 ReLU policy and Q-networks, Adam 2.5e-4, gamma 0.98,
targets moved 0.005 of the way after every gradient step. MPO's own: epsilon
0.1 for the E-step, the policy's KL bound 2.5e-3 (`agent.epsilon_mean`),
duals learned by Adam 1e-2. Seeds 0-2 score 211, 197 and 240 over the last 100
episodes at 200,000 steps: past 100 by 40,000 steps, but not solved
(docs/benchmarks.md, "V-MPO on Sebulba" and below, says why).
"""

from podracer import defaults


def get_config():
    config = defaults("mpo")
    config.env.name = "cartpole"
    config.num_envs = 8
    config.unroll_length = 2
    config.total_steps = 200_000
    config.network.activation = "relu"
    config.network.hidden_sizes = (128, 128)
    config.optimizer.learning_rate = 2.5e-4
    config.optimizer.max_grad_norm = 10.0
    config.agent.gamma = 0.98
    config.agent.buffer_size = 50_000
    config.agent.min_replay_size = 1_000
    config.agent.batch_size = 128
    config.agent.replay_ratio = 2
    config.agent.target_tau = 0.005
    return config
