"""Anakin AlphaZero on Pgx's tic-tac-toe: self-play with Gumbel search in the game's own rules (draft)."""

from podracer import defaults


def get_config():
    config = defaults("alphazero")
    config.env.name = "pgx:tic_tac_toe"
    config.env.kwargs.self_play = True
    config.num_envs = 64
    config.unroll_length = 16
    config.total_steps = 64 * 16 * 100
    config.network.hidden_sizes = (128, 128)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 1e-3
    config.optimizer.max_grad_norm = 1.0
    config.agent.outcome_horizon = 9
    config.agent.num_simulations = 32
    config.agent.buffer_size = 32_768
    config.agent.min_replay_size = 1_024
    config.agent.batch_size = 128
    config.agent.replay_ratio = 4
    return config
