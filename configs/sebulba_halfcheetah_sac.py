"""Sebulba SAC on envpool's MuJoCo HalfCheetah-v4 with CleanRL's SAC networks and batch.

CleanRL's `sac_continuous_action.py`: 256-256 ReLU actor and twin critics,
batches of 256, gamma 0.99, Polyak tau 0.005, the temperature learned towards
-|A| = -6 from 1, a 1e6-step buffer, learning from 5,000 steps on, 1e6 steps
(one environment). Changed for a CPU: one Adam 3e-4 for all three (CleanRL's
critics and temperature use 1e-3), and 2 actor threads x 8 environments
unroll 16 steps (256 per update), each update followed by 32 gradient steps:
one per 8 environment steps where CleanRL takes one per step (with its actor
on every second one). Acting stays one update behind.

On the 2-core CI machine (both devices and the actor threads sharing it) it
runs at about 370 steps per second, so the whole budget takes about 45 min.
Seed 0's first 200,704 steps (9 min) climb from -320 (the first episodes)
through 250 at 129,000 steps to 2,100 at 192,000, still rising steeply.
"""

from podracer import defaults


def get_config():
    config = defaults("sac", architecture="sebulba")
    config.env.name = "HalfCheetah-v4"
    config.envs_per_thread = 8
    config.unroll_length = 16
    config.total_steps = 1_000_000
    config.log_every_updates = 8
    config.network.hidden_sizes = (256, 256)
    config.network.activation = "relu"
    config.optimizer.learning_rate = 3e-4
    config.optimizer.max_grad_norm = 100.0  # SAC does not clip gradients; this only guards against blow-ups.
    config.agent.replay_ratio = 32  # One gradient step per 8 environment steps.
    config.agent.buffer_size = 1_000_000
    config.agent.min_replay_size = 5_000
    return config
