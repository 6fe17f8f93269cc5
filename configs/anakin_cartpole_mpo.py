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

import os

from podracer import defaults, load_config
from podracer.config.loading import with_experiment_of


def get_config():
    dqn = load_config(os.path.join(os.path.dirname(__file__), "anakin_cartpole_dqn.py"))
    config = with_experiment_of(defaults("mpo"), dqn)
    config.total_steps = 200_000
    return config
