"""Anakin Sampled MuZero on gymnax's Pendulum-v1 (continuous torque in [-2, 2]): a search over sampled torques.

Hubert et al. (2021), "Learning and Planning in Complex Action Spaces", at a
CPU's scale: K = 8 torques sampled at each node (2 of them uniformly over
[-2, 2], for exploration), Gumbel MuZero's search (Danihelka et al. 2022)
with 16 simulations over them, whose improved policy is the policy target;
an MLP model with a 64-unit latent state unrolled 3 steps, 5-step value
targets bootstrapped from the current model's value over a support of
-30..30, gamma 0.97. 16 environments x 8 steps per update; each update adds
its 128 steps to the buffer and takes 32 gradient steps on batches of 64
sequences (one per 4 environment steps). Needs the gymnax extra:
pip install -e '.[gymnax]'.

Seeds 0-4 end the 160,000 steps at -152, -172, -162, -224 and -177 over the
last 100 episodes (a uniformly random policy: -1,200); at 80,000 steps seeds 3
and 4, which take off later, were still at -594 and -286 (docs/benchmarks.md).
Tuned on seed 0 at 64,000 steps: pUCT, gamma 0.99 and 16 gradient steps per
update ended at -911; Gumbel search and gamma 0.97, -718; then 32 gradient
steps per update, -219.
"""

from podracer import defaults


def get_config():
    config = defaults("sampled_muzero")
    config.env.name = "gymnax:Pendulum-v1"
    config.num_envs = 16
    config.unroll_length = 8
    config.total_steps = 160_000  # 1,250 updates of 16 x 8 steps: 50 episodes of each environment.
    config.network.activation = "relu"
    config.network.hidden_sizes = (64,)
    config.network.hidden_size = 64
    config.optimizer.learning_rate = 1e-3
    config.optimizer.max_grad_norm = 5.0
    config.agent.gamma = 0.97
    config.agent.n_step = 5
    config.agent.unroll_steps = 3
    config.agent.support_size = 30
    config.agent.value_bootstrap = "model"
    config.agent.num_samples = 8
    config.agent.uniform_fraction = 0.25
    config.agent.search = "gumbel"
    config.agent.num_simulations = 16
    config.agent.max_num_considered_actions = 8
    config.agent.buffer_size = 50_000
    config.agent.min_replay_size = 1_000
    config.agent.batch_size = 64
    config.agent.replay_ratio = 32
    return config
