"""Anakin VDN with GRU agents on MPE simple_spread (JaxMARL), with JaxMARL's baseline settings
(`baselines/QLearning/vdn_rnn.py`, `config/alg/ql_rnn_mpe.yaml`).

Three agents cover three landmarks; the team's Q-value is the sum of the
agents' (Sunehag et al. 2018). As the yaml: 8 environments x 26 steps per
update, a buffer of 5,000 such rollouts (130,000 steps), learning after
10,000 steps from 32 sampled sequences per update, RAdam 5e-3 annealed to 0,
gradients clipped at 25, gamma 0.9, the target network copied every 200
gradient steps, epsilon from 1 to 0.05 over the first 10% of the updates;
Dense 64 (ReLU) and a GRU of 64 shared by the agents, which read their
one-hot id; 1e7 environment steps. JaxMARL's team reward is the sum of the
agents' rewards: `reward_scale = 3` times their mean. Where the script samples
whole rollouts that began at an environment reset and replays them from a
zero state, podracer's buffer keeps unbroken rows of steps and replays
sequences of 26 steps from the GRU state acting had at their first step
(R2D2's stored state), training on their 25 transitions as the script does on
a rollout's; a time limit bootstraps where the script treats it as terminal.
"""

from podracer import defaults


def get_config():
    config = defaults("vdn")
    config.env.name = "jaxmarl:MPE_simple_spread_v3"
    config.num_envs = 8
    config.unroll_length = 26
    config.total_steps = 9_999_808  # 48,076 updates of 8 x 26 steps: JaxMARL's int(1e7 / 26 / 8).
    config.agent.gamma = 0.9
    config.agent.reward_scale = 3.0  # JaxMARL's team reward: the agents' sum.
    config.agent.sequence_length = 25  # Trained transitions: 26 steps sampled, as the script's rollouts.
    config.agent.buffer_size = 130_000
    config.agent.min_replay_size = 10_000
    config.agent.batch_size = 32
    config.agent.target_update_period = 200
    config.network.hidden_sizes = (64,)
    config.network.activation = "relu"
    config.network.core = "gru"
    config.network.core_size = 64
    config.optimizer.name = "radam"
    config.optimizer.learning_rate = 5e-3
    config.optimizer.max_grad_norm = 25.0
    config.optimizer.anneal_lr = True
    config.updates_per_dispatch = 500
    return config
