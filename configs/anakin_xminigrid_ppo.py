"""Anakin PPO on XLand-MiniGrid's MiniGrid-Empty-8x8: walk to the goal in an empty 6x6 room.

The agent sees its egocentric 7x7 view (tile and colour ids, float32) and turns
or steps; reaching the goal is worth 1 - 0.9 * steps / 256 and ends the
episode, 256 steps truncate it. The shortest path takes 11 steps (a return of
0.961); a random policy scores about 0.12. The mlp torso reads the flattened view: on a
CPU the `multi_input` torso's CNN over the 7x7 view trains about 100 times
slower. PureJaxRL's MinAtar settings otherwise (64 environments x 128 steps,
4 epochs x 8 minibatches, separate ReLU actor and critic), but Adam at 1e-3
annealed to 0, not 5e-3, and advantages not normalised. At 5e-3 (and 2.5e-3)
one seed in five, early on, settles on a policy that never reaches the goal
and stays there. Normalised advantages do the same at 1e-3 (seeds 0 and 6 of
0-7 on an Intel AVX-512 host): a batch in which no episode reached the goal
holds nothing but the value's noise, which normalising scales to unit size, and
the policy drifts off stepping forward for good. Unnormalised, such a batch's
advantages are near 0, the entropy bonus pulls the policy back toward uniform,
and every seed of 0-7 reaches 0.926-0.934 by 491K steps (docs/testing.md).
Needs the xminigrid extra: pip install -e '.[xminigrid]'.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo")
    config.env.name = "xminigrid:MiniGrid-Empty-8x8"
    config.num_envs = 64
    config.unroll_length = 128
    config.total_steps = 999_424  # 122 updates of 64 x 128 steps.
    config.network.shared_torso = False
    config.network.activation = "relu"
    config.optimizer.learning_rate = 1e-3
    config.optimizer.anneal_lr = True
    config.agent.num_minibatches = 8
    config.agent.normalize_advantages = False
    return config
