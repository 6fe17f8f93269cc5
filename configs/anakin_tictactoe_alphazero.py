"""Anakin AlphaZero on Pgx's tic-tac-toe: self-play searching with the game's own rules, to perfect play.

Gumbel AlphaZero (Danihelka et al. 2022), as Pgx's AlphaZero example runs
it: 64 games x 16 moves per update, 16 simulations of `gumbel_muzero_policy`
per move over every legal move (at most 9, under `max_num_considered_actions`
16), each edge the game's `step`. A 128-128 ReLU policy-value MLP on Pgx's
3x3x2 planes, Adam 2e-3 (Pgx's example: 1e-3) with gradients clipped at 1;
the buffer holds the last 32,768 moves (about 3,600 games) and each update
takes 8 gradient steps on 128 sampled moves, each with the outcome of its
game (`outcome_horizon` 9: every game ends within 9 moves).

`gumbel_scale` 3 (mctx's default 1) widens self-play's exploration: at 1,
self-play settles on draws within 300K moves and its value network never
sees a blunder, and then it loses 12 games in 1,000 to a random player
(blocking a row it has never seen threatened); at 3, none. 16 simulations
cost a quarter of 32's per move here and lose nothing.

At this budget (200 updates, 204,800 moves) it plays perfectly: seeds 0-10
all lose none of 1,000 greedy games to a uniformly random legal player
(winning 940-955, half of them moving second) and draw all 100 games
against themselves. Shorter runs mostly do too, but not every seed: at 100K
moves seed 5 of 0-7 loses 2 games, at 150K seed 10 of 5 and 8-11 loses one
(a fork it does not see coming), and at 50K two of seeds 0-3 lose 2.
Training takes about 27 s of CPU on this 2-core machine (about 15 s of it
compiling); `podracer evaluate WORKDIR --opponent random --episodes 1000`
checks it in about 10 s, and `--opponent WORKDIR` plays it against itself.
Needs the pgx extra: pip install -e '.[pgx]'.
"""

from podracer import defaults


def get_config():
    config = defaults("alphazero")
    config.env.name = "pgx:tic_tac_toe"
    config.env.kwargs.self_play = True
    config.num_envs = 64
    config.unroll_length = 16
    config.total_steps = 204_800  # 200 updates of 64 x 16 moves.
    config.network.hidden_sizes = (128, 128)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 2e-3
    config.optimizer.max_grad_norm = 1.0
    config.agent.outcome_horizon = 9
    config.agent.num_simulations = 16
    config.agent.gumbel_scale = 3.0
    config.agent.buffer_size = 32_768
    config.agent.min_replay_size = 1_024
    config.agent.batch_size = 128
    config.agent.replay_ratio = 8
    return config
