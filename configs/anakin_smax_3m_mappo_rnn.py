"""Anakin MAPPO with GRUs on SMAX 3m (JaxMARL's StarCraft), with JaxMARL's baseline settings
(`baselines/MAPPO/mappo_rnn_smax.py`, `config/mappo_homogenous_rnn_smax.yaml` with `MAP_NAME=3m`).

Three marines against three, the enemy played by SMAX's heuristic policy
(`HeuristicEnemySMAX`: it sees the allies' actions, walls kill, it attacks the
closest unit). The team is paid the enemy's health it removes (a fraction of
1 over the battle) and 1 more for a win, so a battle is won exactly where the
return exceeds 1: evaluation reports the win rate as `eval_success_rate`
(`evaluation.success_return = 1`). The critic reads SMAX's world state, the
actors their own observation, with dead units' actions masked. As the yaml:
128 environments x 128 steps, 4 epochs x 4 minibatches of whole agent
sequences, Adam 2e-3 annealed to 0, gradients clipped at 0.25, no entropy
bonus; Dense 128 (ReLU), a GRU of 128 and Dense 128 (ReLU) before each head,
shared by the agents; 1e7 environment steps (610 updates). Unlike the script,
one optimiser steps actor and critic on the summed loss, and the actors read
their one-hot id too.
"""

from podracer import defaults


def get_config():
    config = defaults("mappo")
    config.env.name = "jaxmarl:HeuristicEnemySMAX"
    config.env.kwargs.scenario = "3m"
    config.env.kwargs.see_enemy_actions = True
    config.env.kwargs.walls_cause_death = True
    config.env.kwargs.attack_mode = "closest"
    config.num_envs = 128
    config.unroll_length = 128
    config.total_steps = 9_994_240  # 610 updates of 128 x 128 steps: JaxMARL's int(1e7 / 128 / 128).
    config.agent.entropy_cost = 0.0
    config.network.hidden_sizes = (128,)
    config.network.activation = "relu"
    config.network.core = "gru"
    config.network.core_size = 128
    config.network.head_hidden_sizes = (128,)
    config.optimizer.learning_rate = 2e-3
    config.optimizer.max_grad_norm = 0.25
    config.optimizer.anneal_lr = True
    config.updates_per_dispatch = 4  # About 10 s each on 2 CPU cores.
    config.evaluation.every_steps = 1_000_000
    config.evaluation.episodes = 128
    config.evaluation.greedy = False
    config.evaluation.success_return = 1.0
    return config
