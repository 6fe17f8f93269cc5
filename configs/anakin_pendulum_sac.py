"""Anakin SAC on gymnax's Pendulum-v1 (continuous torque in [-2, 2]): -145 over the last 100 episodes in 102,400 steps.

From rejax's SAC on gymnax Pendulum (`configs/gymnax/pendulum.yaml`): batches
of 256 transitions, gamma 0.99, 64-64 networks, Polyak tau 0.02 (rejax's
polyak 0.98); the temperature starts at 1 (CleanRL's SAC) and is learned
towards -|A| = -1. Changed for a CPU: 64 environments x 1 step per update,
each update followed by 2 gradient steps (one per 32 environment steps,
where rejax steps one environment per gradient step), Adam 2e-3 (rejax: 1e-2;
here 1e-3 takes twice the steps and 3e-3 is unstable), ReLU for rejax's
swish, no observation normalisation, a 100,000-step buffer, learning from
2,000 steps on. Needs the gymnax extra: pip install -e '.[gymnax]'.

Pendulum's episodes are 200 steps and all 64 environments end theirs
together, so the last 100 episodes are the last 2 of each environment. At
this budget (1,600 updates, 3,200 gradient steps) seeds 0-2 score -155,
-145 and -142 over them (the first episodes: about -1,350; every seed is
past -175 from 52,000 steps on), in 24-25 s each on the 2-core CI machine,
of which 17-18 s compiling.
"""

from podracer import defaults


def get_config():
    config = defaults("sac")
    config.env.name = "gymnax:Pendulum-v1"
    config.num_envs = 64
    config.unroll_length = 1
    config.total_steps = 102_400  # 1,600 updates of 64 steps: 8 episodes of each environment.
    config.network.hidden_sizes = (64, 64)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 2e-3
    config.optimizer.max_grad_norm = 100.0  # SAC does not clip gradients; this only guards against blow-ups.
    config.agent.target_tau = 0.02
    config.agent.replay_ratio = 2
    config.agent.buffer_size = 100_000
    config.agent.min_replay_size = 2_000
    return config
