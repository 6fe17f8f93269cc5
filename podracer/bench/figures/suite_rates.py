"""Named rows (`--figures suites`): Anakin's bigger CartPole batches and the environment suites, Pong's ResNet.

Not part of the default figures: they take longer, and the suites need their
extras (gymnax, brax, and `.[suites]` for the JAX suites of `podracer.envs.suites`:
one row each, with its shipped config or, for Navix and POPGym Arcade, which
ship none, the XLand-MiniGrid config on their task). Craftax runs 64
environments rather than its config's 1,024, so that a CPU takes seconds per
update. Each Anakin row trains its config on one device in a
process of its own thread count (the 256- and 2048-environment CartPole rows
use one XLA:CPU thread per core, where the kernels are big enough to split);
`pong_resnet` is Sebulba IMPALA with the ResNet torso on one actor and one
learner device, learner-bound on CPU devices.
"""

from podracer.bench.figures import anakin_scaling, sebulba_scaling
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
    "craftax_classic_ppo_rnn_64_envs": (
        "anakin_craftax_classic_ppo_rnn",
        {"num_envs": 64, "total_steps": 64 * 64 * 10 * 3, "updates_per_dispatch": 10},
    ),
    "jumanji_snake_ppo": ("anakin_jumanji_snake_ppo", {"total_steps": 64 * 128 * 10 * 3, "updates_per_dispatch": 10}),
    "playground_cartpole_ppo": (
        "anakin_playground_ppo",
        {"total_steps": 256 * 30 * 10 * 3, "updates_per_dispatch": 10},
    ),
    "xminigrid_empty_ppo": ("anakin_xminigrid_ppo", {"total_steps": 64 * 128 * 10 * 3, "updates_per_dispatch": 10}),
    "navix_empty_ppo": (
        "anakin_xminigrid_ppo",
        {"env.name": "navix:Navix-Empty-8x8-v0", "total_steps": 64 * 128 * 10 * 3, "updates_per_dispatch": 10},
    ),
    "popgym_arcade_count_recall_ppo": (
        "anakin_xminigrid_ppo",
        {"env.name": "popgym_arcade:CountRecallEasy", "total_steps": 64 * 128 * 5 * 3, "updates_per_dispatch": 5},
    ),
    "pgx_2048_ppo": ("anakin_pgx_2048_ppo", {"total_steps": 64 * 128 * 10 * 3, "updates_per_dispatch": 10}),
}


def plan(setup: Setup) -> list[Point]:
    """Every named row, on one device (Pong's ResNet on one actor and one learner device)."""
    points = [
        anakin_scaling.point(setup, FIGURE, "config", row, name, {**overrides, "num_devices": 1})
        for row, (name, overrides) in ANAKIN.items()
    ]
    devices = sebulba_scaling.one_actor_one_learner(setup)
    points.append(
        sebulba_scaling.point(
            setup, FIGURE, "config", "sebulba_pong_impala", sebulba_scaling.split(1, devices), devices
        )
    )
    return points
