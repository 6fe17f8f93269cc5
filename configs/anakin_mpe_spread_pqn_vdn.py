"""Anakin PQN-VDN on MPE simple_spread (JaxMARL), with JaxMARL's baseline settings
(`baselines/QLearning/pqn_vdn_ff.py`, `config/alg/pqn_vdn_ff_mpe.yaml`).

PQN's Q(lambda) on every rollout, with no buffer and no target network, on
the sum of the agents' Q-values (VDN). As the yaml: 256 environments x 16
steps per update, 4 epochs x 16 minibatches, RAdam 5e-4, gradients clipped
at 1, gamma 0.9, lambda 0.3, epsilon from 1 to 0.1 over the first 10% of the
updates; two Dense 256 layers (ReLU) with LayerNorm, shared by the agents,
which read their one-hot id; 1e7 environment steps. JaxMARL's team reward is
the sum of the agents' rewards: `reward_scale = 3` times their mean. A time
limit bootstraps where the script treats it as terminal.
"""

from podracer import defaults


def get_config():
    config = defaults("pqn_vdn")
    config.env.name = "jaxmarl:MPE_simple_spread_v3"
    config.num_envs = 256
    config.unroll_length = 16
    config.total_steps = 9_998_336  # 2,441 updates of 256 x 16 steps: JaxMARL's int(1e7 / 16 / 256).
    config.agent.gamma = 0.9
    config.agent.td_lambda = 0.3
    config.agent.num_epochs = 4
    config.agent.num_minibatches = 16
    config.agent.epsilon_end = 0.1
    config.agent.epsilon_fraction = 0.1
    config.agent.reward_scale = 3.0  # JaxMARL's team reward: the agents' sum.
    config.network.hidden_sizes = (256, 256)
    config.network.activation = "relu"
    config.network.layer_norm = True
    config.optimizer.name = "radam"
    config.optimizer.learning_rate = 5e-4
    config.optimizer.max_grad_norm = 1.0
    config.updates_per_dispatch = 100
    return config
