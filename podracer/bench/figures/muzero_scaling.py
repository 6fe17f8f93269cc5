"""MuZero on Sebulba (`--figures muzero`): frames/s against the devices and replicas it spans, and the simulations.

The paper's Figure 4c shows a MuZero agent's throughput rising linearly with
TPU cores. Here `configs/sebulba_cartpole_muzero.py` (search on the actor
devices, the model learned from replay on the learner devices) runs on
every actor + learner split of the devices and on 1, 2, 4 replicas of one
actor + one learner (`sebulba_scaling.scaling_points`, as figure 4c), then on one
actor and one learner device with 4 to 64 simulations per action: search
is the actors' cost, so frames/s falls as simulations grow. Learning starts
within the warm-up updates (`agent.min_replay_size` 1), so every measured
update takes its gradient steps. Not part of the default figures; with
--quick, the one split of two devices, 2 replicas, and 4 and 16 simulations.
"""

from podracer.bench.figures import sebulba_scaling
from podracer.bench.records import Point, Setup

FIGURE = "muzero"
BENCHMARK = "sebulba_cartpole_muzero"
SIMULATIONS = (4, 8, 16, 32, 64)
QUICK_SIMULATIONS = (4, 16)
LEARNING_FROM_THE_START = {"agent.min_replay_size": 1}


def plan(setup: Setup) -> list[Point]:
    """Every device split and replica count, then every simulation count on one actor and one learner device."""
    points = sebulba_scaling.scaling_points(setup, FIGURE, BENCHMARK, LEARNING_FROM_THE_START, LEARNING_FROM_THE_START)
    devices = sebulba_scaling.one_actor_one_learner(setup)
    for simulations in QUICK_SIMULATIONS if setup.quick else SIMULATIONS:
        overrides = {
            **LEARNING_FROM_THE_START,
            **sebulba_scaling.split(1, devices),
            "agent.num_simulations": simulations,
        }
        points.append(sebulba_scaling.point(setup, FIGURE, "simulations", BENCHMARK, overrides, devices))
    return points
