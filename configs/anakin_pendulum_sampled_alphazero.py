"""Anakin Sampled AlphaZero on gymnax's Pendulum-v1 (continuous torque in [-2, 2]): a search over sampled torques in
the pendulum's own dynamics.

Hubert et al. (2021), "Learning and Planning in Complex Action Spaces", with
AlphaZero's model, the environment itself (`env.kwargs.observe_state`: the
observation carries gymnax's state, which the search steps). The search,
targets, replay and optimiser are `anakin_pendulum_sampled_muzero`'s, for a
comparison at equal settings (docs/benchmarks.md): K = 8 torques sampled at
each node (2 of them uniformly over [-2, 2]), Gumbel MuZero's search with 16
simulations over them, 5-step value targets bootstrapped from the current
network's value over a support of -30..30, gamma 0.97, batches of 64
sequences from a buffer of 50,000 steps. The network is a policy-value MLP
of two 64-unit layers; each update of 16 environments x 8 steps takes 16
gradient steps (Sampled MuZero's model takes 32). Seeds 0-4 end the 64,000
steps at -157 to -178 over the last 100 episodes (a uniformly random policy:
-1,200). Needs the gymnax extra: pip install -e '.[gymnax]'.
"""

import os

from podracer import defaults, load_config

SHARED_AGENT_FIELDS = (  # Sampled MuZero's search, targets and replay.
    *("gamma", "n_step", "support_size", "value_bootstrap"),
    *("num_samples", "uniform_fraction", "search", "num_simulations", "max_num_considered_actions"),
    *("buffer_size", "min_replay_size", "batch_size"),
)


def get_config():
    sampled_muzero = load_config(os.path.join(os.path.dirname(__file__), "anakin_pendulum_sampled_muzero.py"))
    config = defaults("sampled_alphazero")
    config.env.name = sampled_muzero.env.name
    config.num_envs, config.unroll_length = sampled_muzero.num_envs, sampled_muzero.unroll_length
    config.total_steps = 64_000  # 500 updates of 16 x 8 steps: 20 episodes of each environment.
    config.optimizer = sampled_muzero.optimizer
    for field in SHARED_AGENT_FIELDS:
        config.agent[field] = sampled_muzero.agent[field]
    config.network.activation = "relu"
    config.network.hidden_sizes = (64, 64)
    config.agent.replay_ratio = 16
    return config
