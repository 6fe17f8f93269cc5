"""Populations (`--figures population`): Anakin's total steps/s against the number of members in one program.

Each point trains Catch (`configs/anakin_catch.py`) as a population of M
members (`population.seed` = 0 .. M-1; M = 1 is a population of one), each
member with the config's own 512 environments and all M vmapped at once
(`members_in_parallel` = 0), on the config's two forced CPU devices (or on
every accelerator). A population's rate is the total over its members, the
rate per member that over M: linear scaling keeps the rate per member. Every
point runs `DISPATCHES` dispatches (`total_steps` counts each member's
steps), so M members do M times the work of one. Not part of the default
figures; with --quick, 1 and 8 members for 3 dispatches.
"""

from ml_collections import ConfigDict

from podracer.anakin import anakin_settings
from podracer.bench import figure_configs
from podracer.bench.figures import anakin_scaling
from podracer.bench.records import Point, Row, Setup
from podracer.bench.steady import Spread

FIGURE = "population"
BENCHMARK = "anakin_catch"
MEMBERS = (1, 8, 64)
QUICK_MEMBERS = (1, 8)
DISPATCHES = 6  # The first is dropped: the median of 5. A dispatch of 64 members took 1.5-3 s on 2 cores.


def plan(setup: Setup) -> list[Point]:
    """Catch as a population of each of `MEMBERS` (`quick`: `QUICK_MEMBERS`), on the same devices, in one process."""
    config = figure_configs.load_named(BENCHMARK)
    updates_per_dispatch = anakin_settings.updates_per_dispatch(config)
    base = {
        "num_devices": devices(setup, config),
        "updates_per_dispatch": updates_per_dispatch,
        "total_steps": DISPATCHES * updates_per_dispatch * anakin_settings.steps_per_update(config),
    }
    return [
        anakin_scaling.point(setup, FIGURE, "members", BENCHMARK, BENCHMARK, {**base, "population.seed": seeds(m)})
        for m in (QUICK_MEMBERS if setup.quick else MEMBERS)
    ]


def devices(setup: Setup, config: ConfigDict) -> int:
    """The config's CPU devices on forced CPU devices (at most the most a point may use); else every accelerator."""
    return min(figure_configs.cpu_devices(config), setup.max_devices) if setup.forced_cpu else setup.max_devices


def seeds(members: int) -> str:
    """`population.seed` for `members` members, 0 .. members-1, as command-line text (a task travels as JSON)."""
    return str(tuple(range(members)))


def per_member(row: Row) -> Spread:
    """A population row's rates over its members: what each member ran at (its median, smallest and largest)."""
    return Spread(row.median / row.members, row.min / row.members, row.max / row.members)
