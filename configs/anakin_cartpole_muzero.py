"""Anakin MuZero on CartPole-v1: the model learned and searched inside the compiled program.

32 environments x 16 steps per update over the two XLA:CPU devices; each
update adds its 512 steps to the device buffers and takes 32 gradient steps
on batches of 64 sequences on each device (one per 8 environment steps over
both devices). An MLP model with a 64-unit latent state, unrolled 5 steps,
10-step value targets over a support of -10..10, bootstrapped from the
current model's value (`value_bootstrap="model"`: the searches' stored root
values, as old as the buffer, left seeds 0-4 at 142-406 after 120K steps);
MuZero's pUCT search with 16 simulations, acting on the visit counts at
temperature 0.25 (the last of the paper's Atari schedule) so that a good
policy keeps the pole up for 500 steps. Seeds 0-4 end 200K steps at 470-500
(mean of the last 100 episodes 483-500).
"""

from podracer import defaults


def get_config():
    config = defaults("muzero")
    config.env.name = "cartpole"
    config.cpu_devices = 2  # Two buffers and two batches of 64: the tuning, on any machine.
    config.num_envs = 32
    config.unroll_length = 16
    config.total_steps = 204_800  # 400 updates of 32 x 16 steps.
    config.network.activation = "relu"
    config.network.hidden_sizes = (64,)
    config.network.hidden_size = 64
    config.optimizer.learning_rate = 1e-3
    config.optimizer.max_grad_norm = 5.0
    config.agent.gamma = 0.99
    config.agent.n_step = 10
    config.agent.unroll_steps = 5
    config.agent.support_size = 10
    config.agent.value_bootstrap = "model"
    config.agent.search = "muzero"
    config.agent.num_simulations = 16
    config.agent.temperature = 0.25
    config.agent.buffer_size = 25_000
    config.agent.min_replay_size = 1_000
    config.agent.batch_size = 64
    config.agent.replay_ratio = 32
    return config
