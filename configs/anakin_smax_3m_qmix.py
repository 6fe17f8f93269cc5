"""Anakin QMIX with GRU agents on SMAX 3m (JaxMARL's StarCraft), with JaxMARL's baseline settings
(`baselines/QLearning/qmix_rnn.py`, `config/alg/ql_rnn_smax.yaml`, there for 3s_vs_5z, here with `MAP_NAME=3m`).

Three marines against three played by SMAX's heuristic enemy, as
`anakin_smax_3m_mappo_rnn.py`: a battle is won exactly where the return
exceeds 1, which evaluation reports as `eval_success_rate`. The mixer reads
SMAX's world state. As the yaml: 16 environments x 128 steps per update, a
buffer of 5,000 such rollouts (640,000 steps), learning after 10,000 steps,
8 gradient steps per update on 32 sampled sequences each, RAdam 5e-5,
gradients clipped at 10, gamma 0.99, rewards scaled by 10 (`REW_SCALE`), the
target network copied every 10 updates (80 gradient steps), epsilon from 1 to
0.05 over the first 10% of the updates; Dense 512 (ReLU) and a GRU of 512
shared by the agents, which read their one-hot id; a mixing embedding of 64,
hypernetworks of 256; 1e7 environment steps. podracer replays sequences of
128 transitions from the GRU state acting had at their first step (R2D2's
stored state) where the script replays rollouts that began at a reset.
"""

from podracer import defaults


def get_config():
    config = defaults("qmix")
    config.env.name = "jaxmarl:HeuristicEnemySMAX"
    config.env.kwargs.scenario = "3m"
    config.env.kwargs.see_enemy_actions = True
    config.env.kwargs.walls_cause_death = True
    config.env.kwargs.attack_mode = "closest"
    config.num_envs = 16
    config.unroll_length = 128
    config.total_steps = 9_994_240  # 4,880 updates of 16 x 128 steps: JaxMARL's int(1e7 / 128 / 16).
    config.agent.gamma = 0.99
    config.agent.reward_scale = 10.0
    config.agent.sequence_length = 128
    config.agent.buffer_size = 640_000
    config.agent.min_replay_size = 10_000
    config.agent.batch_size = 32
    config.agent.replay_ratio = 8
    config.agent.target_update_period = 80
    config.agent.embedding_size = 64
    config.agent.hypernet_hidden_size = 256
    config.agent.mixer_init_scale = 0.001
    config.network.hidden_sizes = (512,)
    config.network.activation = "relu"
    config.network.core = "gru"
    config.network.core_size = 512
    config.optimizer.name = "radam"
    config.optimizer.learning_rate = 5e-5
    config.optimizer.max_grad_norm = 10.0
    config.updates_per_dispatch = 10
    config.evaluation.every_steps = 1_000_000
    config.evaluation.episodes = 128
    config.evaluation.greedy = True
    config.evaluation.success_return = 1.0
    return config
