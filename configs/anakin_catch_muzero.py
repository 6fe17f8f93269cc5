"""Anakin MuZero on Catch: a learned model and tree search, all inside the compiled program.

64 environments x 8 steps per update over the two XLA:CPU devices; each
update adds its 512 steps to the device buffers and takes 8 gradient steps on
batches of 64 sequences on each device (one per 4 environment steps). An MLP model with a
64-unit latent state, unrolled 5 steps, 5-step value targets over Catch's
9-step episodes; Gumbel MuZero with 8 simulations, which mctx recommends
for few simulations. Its 307K steps end seeds 0-4 at 0.91-1.0 over the last
100 episodes (about 30 s on the 2-core CI machine).
"""

from podracer import defaults


def get_config():
    config = defaults("muzero")
    config.env.name = "catch"
    config.env.kwargs.rows = 10
    config.env.kwargs.columns = 5
    config.cpu_devices = 2  # Two buffers and two batches of 64: the tuning, on any machine.
    config.num_envs = 64
    config.unroll_length = 8
    config.total_steps = 307_200  # 600 updates of 64 x 8 steps.
    config.network.activation = "relu"
    config.network.hidden_sizes = (64,)
    config.network.hidden_size = 64
    config.optimizer.learning_rate = 3e-3
    config.optimizer.max_grad_norm = 5.0
    config.agent.gamma = 0.99
    config.agent.n_step = 5
    config.agent.unroll_steps = 5
    config.agent.support_size = 5
    config.agent.search = "gumbel"
    config.agent.num_simulations = 8
    config.agent.max_num_considered_actions = 3
    config.agent.buffer_size = 20_000
    config.agent.min_replay_size = 1_000
    config.agent.batch_size = 64
    config.agent.replay_ratio = 8
    return config
