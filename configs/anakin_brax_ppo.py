"""Anakin PPO with the Gaussian head on Brax's inverted_pendulum, sized to train on a CPU in minutes.

Brax's own PPO settings for this task (discount 0.97, Adam 3e-4, 4 epochs x 32
minibatches, observation normalisation, entropy 0.01), on 128 environments x
32 steps (4,096 per update) instead of 2,048 x 5, with 1,000-step episodes on
Brax's "spring" pipeline (podracer's default for CPU; `env.kwargs.backend`
picks another). Rewards are 1 per step upright, so 1,000 is the maximum.

On an accelerator, widen the batch as Brax does: `--config.num_envs=2048`
(or more, split over the devices), `--config.unroll_length=16`, and
`--config.env.kwargs.backend=generalized` or `mjx` for Brax's exact physics.
Needs the brax extra: pip install -e '.[brax]'.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo")
    config.env.name = "brax:inverted_pendulum"
    config.num_envs = 128
    config.unroll_length = 32
    config.total_steps = 2_007_040  # 490 updates of 128 x 32 steps.
    config.network.shared_torso = False
    config.optimizer.learning_rate = 3e-4
    config.agent.gamma = 0.97
    config.agent.num_minibatches = 32
    config.agent.normalize_observations = True
    config.agent.scale_rewards = True
    return config
