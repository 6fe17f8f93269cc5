"""Meta-training (`--figures meta`): LPG meta-training's inner environment steps/s against the population's members.

Each point meta-trains the rule of `configs/anakin_lpg_gridworlds.py` (what
`podracer meta-train` runs) with every entry of `meta.environments` given the
same multiple of its members: the config's 16 (6 + 4 + 6), then 4 and 16
times as many (64, 256; on an accelerator also 1,024, the Podracer paper's 1K
policies), each member keeping the config's `meta.envs_per_member`
environments. The entries travel as the text of a tuple, as a population's
seeds do, so the config itself needs no bench-only field. A point's rate is
the inner environment steps over every member per second (a record's
`steps_per_second`), the median over its dispatches of `UPDATES_PER_DISPATCH`
meta-updates after the first (`steady.anakin_rate`); the rate per member is
that over the members. It runs on the config's two forced CPU devices (or on
every accelerator), the members split over them. Not part of the default
figures; with --quick, 16 and 32 members for 3 dispatches.
"""

import math
from collections.abc import Sequence
from typing import Any

from ml_collections import ConfigDict

from podracer.bench import figure_configs
from podracer.bench.figures import anakin_scaling, population_scaling
from podracer.bench.records import MetaTrainRun, Point, Setup

FIGURE = "meta"
BENCHMARK = "anakin_lpg_gridworlds"
MULTIPLES = (1, 4, 16)  # Of the config's members (the smallest multiple the devices allow).
ACCELERATOR_MULTIPLES = (1, 4, 16, 64)
QUICK_MULTIPLES = (1, 2)
UPDATES_PER_DISPATCH = 2  # A dispatch of 256 members took about 6 s on 2 shared cores.
DISPATCHES = 4  # The first is dropped: the median of 3.


def plan(setup: Setup) -> list[Point]:
    """The config's members times each of `MULTIPLES` (`quick`: `QUICK_MULTIPLES`), on the same devices, one process."""
    config = figure_configs.load_named(BENCHMARK)
    devices = population_scaling.devices(setup, config)
    smallest = smallest_multiple(config.meta.environments, devices)
    multiples = QUICK_MULTIPLES if setup.quick else MULTIPLES if setup.forced_cpu else ACCELERATOR_MULTIPLES
    dispatches = anakin_scaling.QUICK_DISPATCHES if setup.quick else DISPATCHES
    return [point(setup, config, devices, smallest * multiple, dispatches) for multiple in multiples]


def point(setup: Setup, config: ConfigDict, devices: int, multiple: int, dispatches: int) -> Point:
    """Meta-training with `multiple` times the config's members on `devices` devices, for `dispatches` dispatches."""
    overrides = {
        "num_devices": devices,
        "meta.environments": scaled(config.meta.environments, multiple),
        "meta.updates": dispatches * UPDATES_PER_DISPATCH,
        "meta.updates_per_dispatch": UPDATES_PER_DISPATCH,
    }
    loaded = figure_configs.load_named(BENCHMARK, overrides)  # As the measuring process will load it.
    entries = loaded.meta.environments
    columns = {
        "env": "+".join(dict.fromkeys(name for name, _, _ in entries)),
        "network": figure_configs.network_label(loaded),
        "devices": devices,
        "num_envs": loaded.meta.envs_per_member,  # Each member's, as a population's.
        "unroll_length": loaded.unroll_length,
        "members": sum(members for _, _, members in entries),
    }
    task = MetaTrainRun(figure_configs.path(BENCHMARK), overrides)
    return Point(FIGURE, "members", BENCHMARK, setup.launch(devices, config.cpu_threads), task, columns)


def scaled(environments: Sequence[tuple[str, dict[str, Any], int]], multiple: int) -> str:
    """`meta.environments` with every entry's members times `multiple`, as command-line text (a task travels as JSON)."""
    return str(tuple((name, dict(kwargs), members * multiple) for name, kwargs, members in environments))


def smallest_multiple(environments: Sequence[tuple[str, dict[str, Any], int]], devices: int) -> int:
    """The smallest multiple of every entry's members that `devices` divides (each device holds a share of each)."""
    return math.lcm(*(devices // math.gcd(members, devices) for _, _, members in environments))
