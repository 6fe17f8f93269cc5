"""Anakin recurrent PPO on Craftax-Classic (symbolic) with the Craftax baseline's PPO-RNN settings.

Craftax_Baselines' `ppo_rnn.py` (github.com/MichaelTMatthews/Craftax_Baselines,
its argparse defaults): 1024 environments x 64 steps, 4 epochs x 8
minibatches of whole environments (each replaying its 64-step sequence from
its stored GRU state), Adam 2e-4 (eps 1e-5) annealed linearly to 0, gradient
norm 1.0, clipping 0.2 (value clipped too), gamma 0.99, GAE lambda 0.8,
entropy 0.01, value cost 0.5, advantages normalised per minibatch, 1e9
environment steps (Craftax-1B). Its network: Dense(512) ReLU embedding ->
GRU(512) -> actor and critic heads of two Dense(512) ReLU layers each.

Differences: the baseline resets finished episodes with Craftax's optimistic
resets (a pool of pre-generated worlds) and treats every `done` as terminal,
the time limit (10000 steps) included; podracer resets each episode afresh
from its own key (`AutoReset`, up to 1/16 of the batch alone by Craftax's
default `env.reset_fraction`) and bootstraps across the time limit (discount 1 on
truncation). Initialisation follows podracer's networks (the baseline's
orthogonal scales differ). Needs the craftax extra: pip install -e '.[craftax]'.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo")
    config.env.name = "craftax:Craftax-Classic-Symbolic-v1"
    config.num_envs = 1024
    config.unroll_length = 64
    config.total_steps = 999_948_288  # 15,258 updates of 1024 x 64 steps: the baseline's int(1e9) // 64 // 1024.
    config.network.torso = "mlp"
    config.network.hidden_sizes = (512,)
    config.network.activation = "relu"
    config.network.shared_torso = True
    config.network.core = "gru"
    config.network.core_size = 512
    config.network.head_hidden_sizes = (512, 512)
    config.optimizer.learning_rate = 2e-4
    config.optimizer.anneal_lr = True
    config.optimizer.max_grad_norm = 1.0
    config.agent.gamma = 0.99
    config.agent.gae_lambda = 0.8
    config.agent.clip_epsilon = 0.2
    config.agent.entropy_cost = 0.01
    config.agent.value_cost = 0.5
    config.agent.num_epochs = 4
    config.agent.num_minibatches = 8
    return config
