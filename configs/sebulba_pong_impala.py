"""Sebulba IMPALA (V-trace) on Atari Pong, close to the IMPALA paper's Atari set-up.

Espeholt et al. (2018), Table G.1 and Section 5.3: the ResNet torso (channels
16-32-32, two residual blocks per stage), unroll length 20, RMSProp (lr 6e-4
annealed to 0, decay 0.99, eps 0.01), entropy 0.01, baseline cost 0.5,
discount 0.99, global-norm gradient clipping at 40, rewards clipped to [-1, 1]
by the learner (episode returns report the game's score).
Two actor threads of 32 environments each feed a learner batch of 64
trajectories. Standard envpool Atari preprocessing: 84x84 grey, 4 stacked
frames, frame skip 4, up to 30 no-ops at the start. By default the actors use
device 0 and the learners every other device (or device 0 too on a one-device
machine); choose others with e.g. `--config.learner_device_ids="(1,2,3)"`.
"""

from podracer import defaults


def get_config():
    config = defaults("impala", architecture="sebulba")
    config.env.name = "Pong-v5"
    config.agent.reward_clip = 1.0
    config.envs_per_thread = 32
    config.actor_threads_per_device = 2
    config.unroll_length = 20
    config.total_steps = 10_000_000  # Agent steps: 40M frames.
    config.network.torso = "impala_resnet"
    config.network.channels = (16, 32, 32)
    config.network.num_blocks = 2
    config.network.hidden_size = 256
    config.optimizer.name = "rmsprop"
    config.optimizer.learning_rate = 6e-4
    config.optimizer.eps = 0.01
    config.optimizer.max_grad_norm = 40.0
    config.optimizer.anneal_lr = True
    config.log_every_updates = 20
    return config
