"""Anakin PPO with the Gaussian head on MuJoCo Playground's CartpoleBalance, sized to train on a CPU in minutes.

Playground's own brax PPO settings for the DeepMind Control Suite
(`mujoco_playground.config.dm_control_suite_params.brax_ppo_config`): discount
0.995, 30-step unrolls, 16 epochs, clip 0.3 (no value clipping), entropy 0.01,
observation normalisation, 1,000-step episodes. Changed for a CPU: 256
environments (Playground: 2,048) and 8 minibatches of 960 transitions, so
7,680 steps per update instead of Playground's 983,040 (1,024 x 32 x 30); with
that many more updates per step, Adam at Playground's 1e-3 reaches 999 and
then collapses (its policy's std shrinks and the updates blow up), while 3e-4
climbs steadily. Playground scales rewards by a constant 10; podracer divides
them by the running std of the return instead (`scale_rewards`). The network
is podracer's separate 64-64 tanh actor and critic (Playground's brax networks:
4 x 32 and 5 x 256 swish). Rewards are in [0, 1] per step, so 1,000 is the
maximum return; 2M steps reach about 990 (the DeepMind Control Suite's usual
budget is 1M to 100M steps; Playground trains this task for 60M on a GPU).

Physics on MJX's JAX implementation, the adapter's default on any device;
on an NVIDIA GPU `--config.env.kwargs.impl=warp` selects Playground's own
default, Warp, and `--config.num_envs=2048 --config.agent.num_minibatches=32`
Playground's batch. Needs the playground extra: pip install -e '.[playground]'.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo")
    config.env.name = "playground:CartpoleBalance"
    config.num_envs = 256
    config.unroll_length = 30
    config.total_steps = 1_996_800  # 260 updates of 256 x 30 steps.
    config.network.shared_torso = False
    config.optimizer.learning_rate = 3e-4
    config.agent.gamma = 0.995
    config.agent.num_epochs = 16
    config.agent.num_minibatches = 8
    config.agent.clip_epsilon = 0.3
    config.agent.clip_value_loss = False
    config.agent.entropy_cost = 1e-2
    config.agent.normalize_observations = True
    config.agent.scale_rewards = True
    return config
