"""Sebulba MuZero on Atari Pong, the Podracer paper's set-up (Hessel et al. 2021, Section 4), meant for accelerators.

MuZero without Reanalyse (Schrittwieser et al. 2020, Appendix G): the residual
model of Appendix F (narrower: 64 and 128 planes, 2 blocks per stage),
unrolled K = 5 steps, 10-step value targets at gamma 0.997, values and
rewards over the h-transformed support -300..300, 50 simulations of MuZero's
pUCT search with Dirichlet noise, prioritised replay (alpha 1, beta 1).
Adam at 1e-4 replaces the paper's SGD with momentum.

Two actor threads of 32 environments unroll 20 steps; each update's 1,280
agent steps reach the learner devices, which split them into
`learner_minibatches = 4` sequential learn calls, each adding a quarter of
the environments and taking 4 gradient steps on batches of 256 sequences:
the paper keeps data efficiency as acting scales by splitting the learner's
batch into N sequential updates. The buffer is per learner device: 500K
stacked 84x84x4 frames are about 14 GB. Standard envpool Atari
preprocessing, as for `sebulba_pong_impala`.
"""

from podracer import defaults


def get_config():
    config = defaults("muzero", architecture="sebulba")
    config.env.name = "Pong-v5"
    config.envs_per_thread = 32
    config.actor_threads_per_device = 2
    config.unroll_length = 20
    config.learner_minibatches = 4
    config.total_steps = 50_000_000  # Agent steps: 200M frames.
    config.log_every_updates = 20
    config.network.torso = "muzero_resnet"
    config.network.channels = (64, 128)
    config.network.num_blocks = 2
    config.network.hidden_size = 256
    config.optimizer.name = "adam"
    config.optimizer.learning_rate = 1e-4
    config.optimizer.max_grad_norm = 5.0
    config.agent.gamma = 0.997
    config.agent.n_step = 10
    config.agent.unroll_steps = 5
    config.agent.support_size = 300
    config.agent.value_cost = 0.25
    config.agent.search = "muzero"
    config.agent.num_simulations = 50
    config.agent.buffer_size = 500_000
    config.agent.min_replay_size = 20_000
    config.agent.batch_size = 256
    config.agent.replay_ratio = 4
    config.agent.prioritised = True
    config.agent.priority_exponent = 1.0
    config.agent.importance_exponent = 1.0
    return config
