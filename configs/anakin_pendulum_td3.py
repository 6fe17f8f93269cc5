"""Anakin TD3 on gymnax's Pendulum-v1 (continuous torque in [-2, 2]): -145 over the last 100 episodes in 102,400 steps.

The paper's TD3 (Fujimoto et al. 2018): policy delay 2, exploration noise
0.1 and target smoothing noise 0.2 clipped at 0.5 (in units of the action
range's half-width), gamma 0.99, batches of 256. Polyak tau 0.05 as in
rejax's TD3 on gymnax Pendulum (its polyak 0.95; with tau 0.01, nearer the
paper's 0.005, seeds 0 and 1 still score -570 and -300 at 96,000 steps); the rest as `anakin_pendulum_sac`: 64
environments x 1 step per update, 2 gradient steps each, 64-64 ReLU
networks, Adam 2e-3, a 100,000-step buffer, learning from 2,000 steps on.
Needs the gymnax extra: pip install -e '.[gymnax]'.

Pendulum's episodes are 200 steps and all 64 environments end theirs
together, so the last 100 episodes are the last 2 of each environment. At
this budget (1,600 updates, 3,200 critic and 1,600 actor steps) seeds 0-2
score -155, -147 and -145 over them (the first episodes: about -1,350;
every seed is past -160 from 64,000 steps on), in 24-27 s each on the
2-core CI machine, of which 17-20 s compiling.
"""

from podracer import defaults


def get_config():
    config = defaults("td3")
    config.env.name = "gymnax:Pendulum-v1"
    config.num_envs = 64
    config.unroll_length = 1
    config.total_steps = 102_400  # 1,600 updates of 64 steps: 8 episodes of each environment.
    config.network.hidden_sizes = (64, 64)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 2e-3
    config.optimizer.max_grad_norm = 100.0  # TD3 does not clip gradients; this only guards against blow-ups.
    config.agent.target_tau = 0.05
    config.agent.replay_ratio = 2
    config.agent.buffer_size = 100_000
    config.agent.min_replay_size = 2_000
    return config
