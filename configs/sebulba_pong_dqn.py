"""Sebulba DQN on Atari Pong with the Atari DQN settings, meant for accelerators.

Mnih et al. (2015), "Human-level control through deep reinforcement learning",
Extended Data Table 1: the Nature CNN, a replay memory of 1M steps, replay
starting after 50K, minibatches of 32, one gradient step per 4 agent steps,
the target network copied every 10K gradient steps, discount 0.99, epsilon
from 1 to 0.1 over the first 1M steps, rewards clipped to [-1, 1], and the
Huber loss (their error clipping). Double Q-learning as van Hasselt et al.
(2016). Adam at 1e-4 (eps 1.5e-4, Hessel et al. 2018) replaces the paper's
centred RMSProp with momentum, which `optimizer.name` does not offer.

Two actor threads of 32 environments unroll 8 steps: 512 agent steps per
rollout, so the learner takes 128 gradient steps on each (the 1:4 ratio).
The buffer and `min_replay_size` are per learner device: 1M stacked 84x84x4
uint8 frames are about 28 GB of device memory (lower `agent.buffer_size` on
smaller accelerators). Standard envpool Atari preprocessing, as for
`sebulba_pong_impala`.
"""

from podracer import defaults


def get_config():
    config = defaults("dqn", architecture="sebulba")
    config.env.name = "Pong-v5"
    config.envs_per_thread = 32
    config.actor_threads_per_device = 2
    config.unroll_length = 8
    config.total_steps = 10_000_000  # Agent steps: 40M frames.
    config.network.torso = "nature_cnn"
    config.network.hidden_size = 512
    config.optimizer.name = "adam"
    config.optimizer.learning_rate = 1e-4
    config.optimizer.eps = 1.5e-4
    config.optimizer.max_grad_norm = 10.0  # A guard only: the Huber loss already bounds each error's gradient.
    config.agent.gamma = 0.99
    config.agent.n_step = 1
    config.agent.double_q = True
    config.agent.target_update_period = 10_000
    config.agent.target_tau = 1.0
    config.agent.epsilon_start = 1.0
    config.agent.epsilon_end = 0.1
    config.agent.epsilon_fraction = 0.1  # 1M of the 10M steps.
    config.agent.reward_clip = 1.0
    config.agent.buffer_size = 1_000_000
    config.agent.min_replay_size = 50_000
    config.agent.batch_size = 32
    config.agent.replay_ratio = 128
    config.log_every_updates = 20
    return config
