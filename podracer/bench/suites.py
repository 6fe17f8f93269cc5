"""Named rows (`--figures suites`): Anakin's bigger CartPole batches and the environment suites, Pong's ResNet.

Not part of the default figures: they take longer, and the suites need their
extras (gymnax, brax). Each Anakin row trains its config on one device in a
process of its own thread count (the 256- and 2048-environment CartPole rows
use one XLA:CPU thread per core, where the kernels are big enough to split);
`pong_resnet` is Sebulba IMPALA with the ResNet torso on one actor and one
learner device, learner-bound on CPU devices.
"""

from podracer.bench import anakin_scaling, sebulba
from podracer.bench.records import Point, Setup

FIGURE = "suites"
ANAKIN = {  # row: (config, overrides)
    "cartpole_ppo_256_envs": (
        "anakin_cartpole_ppo",
        {"num_envs": 256, "total_steps": 256 * 128 * 4 * 20, "updates_per_dispatch": 4, "cpu_threads": 0},
    ),
    "cartpole_ppo_2048_envs": (
        "anakin_cartpole_ppo",
        {"num_envs": 2048, "total_steps": 2048 * 128 * 10, "updates_per_dispatch": 1, "cpu_threads": 0},
    ),
    "minatar_breakout_ppo": ("anakin_minatar_breakout_ppo", {"total_steps": 64 * 128 * 61 * 3}),
    "pendulum_ppo": ("anakin_pendulum_ppo", {}),
    "brax_inverted_pendulum_ppo": ("anakin_brax_ppo", {"total_steps": 128 * 32 * 49 * 3}),
}


def plan(setup: Setup) -> list[Point]:
    """Every named row, on one device (Pong's ResNet on one actor and one learner device)."""
    points = [
        anakin_scaling.point(setup, FIGURE, "config", row, name, {**overrides, "num_devices": 1})
        for row, (name, overrides) in ANAKIN.items()
    ]
    devices = sebulba.one_actor_one_learner(setup)
    points.append(sebulba.point(setup, FIGURE, "config", "sebulba_pong_impala", sebulba.split(1, devices), devices))
    return points
