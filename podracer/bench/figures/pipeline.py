"""Pipeline efficiency: Sebulba's frames/s with a small network over envpool's own rate on the same environments.

For each environment, envpool alone steps the config's actor threads x
environments with random actions from as many Python threads (the ceiling),
then Sebulba trains the same config with a small network, so that inference
and learning cost little, on one actor and one learner device. The ratio says
how much of the environments' speed the actor / learner pipeline keeps.
Pong runs a 16-unit MLP on the pixels (`sebulba_scaling.SMALL_NETWORK`); CartPole (2 threads x 16) and
HalfCheetah (2 threads x 8, continuous PPO) their configs' own small MLPs.

Sebulba runs once per way its actors can step the environment
(`config.env_stepping`), side by side in the same process: from Python
(`host`), and, for the envpool tasks whose arrays are 32-bit (Pong, CartPole;
not MuJoCo's float64), as one compiled program per rollout (`compiled`).
"""

import dataclasses
from collections.abc import Sequence

from podracer.bench.figures import sebulba_scaling
from podracer.bench.records import EnvpoolRun, Point, Row, Setup

FIGURE = "pipeline"
ENVIRONMENTS = {  # name: (config, overrides for a small network, the env_stepping values to measure)
    "pong": ("sebulba_pong_impala", sebulba_scaling.SMALL_NETWORK, ("host", "compiled")),
    "cartpole": ("sebulba_cartpole_impala", {}, ("host", "compiled")),
    "halfcheetah": ("sebulba_halfcheetah_ppo", {}, ("host",)),  # MuJoCo's float64 arrays step from Python only.
}
QUICK_ENVIRONMENTS = ("cartpole",)
RAW = "envpool_random_actions"


def plan(setup: Setup) -> list[Point]:
    """For each environment: envpool alone, then Sebulba with each of its steppings, in the same process."""
    points = []
    devices = sebulba_scaling.one_actor_one_learner(setup)
    for env in QUICK_ENVIRONMENTS if setup.quick else ENVIRONMENTS:
        name, small_network, steppings = ENVIRONMENTS[env]
        trained = [
            sebulba_scaling.point(
                setup,
                FIGURE,
                "pipeline",
                name,
                {**small_network, **sebulba_scaling.split(1, devices), "env_stepping": stepping},
                devices,
                columns={"env_stepping": stepping},
            )
            for stepping in steppings
        ]
        shape = {key: trained[0].columns[key] for key in ("env", "actor_threads", "envs_per_thread", "unroll_length")}
        updates = sebulba_scaling.measured_updates(setup) * trained[0].task.overrides["log_every_updates"]
        steps = shape["unroll_length"] * updates
        raw = EnvpoolRun(shape["env"], shape["actor_threads"], shape["envs_per_thread"], steps)
        columns = {**shape, "network": "none", "devices": 0}
        points += [Point(FIGURE, "pipeline", RAW, trained[0].launch, raw, columns), *trained]
    return points


def with_efficiency(rows: Sequence[Row]) -> list[Row]:
    """`rows` with each pipeline Sebulba row's efficiency: its rate over envpool's alone on the same environments."""
    raw = {row.env: row.median for row in rows if row.figure == FIGURE and row.benchmark == RAW}
    return [
        dataclasses.replace(row, efficiency=row.median / raw[row.env])
        if row.figure == FIGURE and row.benchmark != RAW and row.env in raw
        else row
        for row in rows
    ]
