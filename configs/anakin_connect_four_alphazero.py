"""Anakin AlphaZero on Pgx's Connect Four: self-play searching with the game's own rules, against a random player.

The tic-tac-toe config's agent (`anakin_tictactoe_alphazero`, which says
where each setting comes from) on the 6x7x2 planes of Connect Four: 64 games
x 16 moves per update, 16 Gumbel simulations per move over the 7 columns,
`gumbel_scale` 3, a 128-128 ReLU policy-value MLP, Adam 2e-3, a buffer of
the last 65,536 moves (about 3,000 games) with 8 gradient steps per update on
128 sampled moves, each with its game's outcome (`outcome_horizon` 42: no
game lasts longer).

Untrained, the search alone wins 84% of 1,000 games against a uniformly
random legal player. At this budget (200 updates, 204,800 moves, about 25 s
on this 2-core machine, most of it compiling) seeds 0-2 win 993, 997 and
992 of 1,000 greedy games, half of them moving second; `podracer evaluate
WORKDIR --opponent random --episodes 1000` checks it. Needs the pgx extra:
pip install -e '.[pgx]'.
"""

from podracer import defaults


def get_config():
    config = defaults("alphazero")
    config.env.name = "pgx:connect_four"
    config.env.kwargs.self_play = True
    config.num_envs = 64
    config.unroll_length = 16
    config.total_steps = 204_800  # 200 updates of 64 x 16 moves.
    config.network.hidden_sizes = (128, 128)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 2e-3
    config.optimizer.max_grad_norm = 1.0
    config.agent.outcome_horizon = 42
    config.agent.num_simulations = 16
    config.agent.gumbel_scale = 3.0
    config.agent.buffer_size = 65_536
    config.agent.min_replay_size = 4_096
    config.agent.batch_size = 128
    config.agent.replay_ratio = 8
    return config
