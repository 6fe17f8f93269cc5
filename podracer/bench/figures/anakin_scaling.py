"""Figure 4a: Anakin's steps/s against the number of devices, at a fixed batch per device.

Each point trains a config on n devices (1, 2, 4, ... up to the most there
are) with n times the config's environments per device (its `num_envs` over
its devices on the 2-core CI machine, `figure_configs.cpu_devices`), so every device has the same batch, and the program is
the same on each. On a machine without an accelerator (or with --cpu) the
devices are forced CPU devices, one fresh
process per n (with --quick, one process with the most devices, each point
using `num_devices` of them). Scaling efficiency is FPS(n) / (n FPS(1)): 1 is linear scaling.
Forced CPU devices share the machine's cores, so beyond the core count they
cannot scale.
"""

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from podracer.anakin import anakin_settings
from podracer.bench import figure_configs
from podracer.bench.records import AnakinRun, Point, Row, Setup
from podracer.config import population

FIGURE = "4a"
BENCHMARKS = ("anakin_catch", "anakin_cartpole_ppo")
QUICK_BENCHMARKS = ("anakin_catch",)  # CartPole PPO's compilation alone would take a quarter of --quick's minute.
QUICK_DISPATCHES = 3  # The first is dropped: the median of two.
QUICK_MAX_DEVICES = 2


def device_counts(max_devices: int) -> list[int]:
    """1, 2, 4, ... up to `max_devices`, and `max_devices` itself where it is not a power of two."""
    counts = [2**k for k in range(max_devices.bit_length()) if 2**k <= max_devices]
    return counts if counts[-1] == max_devices else [*counts, max_devices]


def plan(setup: Setup) -> list[Point]:
    """Every benchmark at every device count, for its config's number of dispatches (`quick`: Catch, 3, 1-2 devices)."""
    max_devices = min(setup.max_devices, QUICK_MAX_DEVICES) if setup.quick else setup.max_devices
    points = []
    for name in QUICK_BENCHMARKS if setup.quick else BENCHMARKS:
        config = figure_configs.load_named(name)
        devices = figure_configs.cpu_devices(config)
        per_device = config.num_envs // devices  # The config's own batch per device (Catch: two of 256).
        for n in device_counts(max_devices):
            overrides = {
                "num_devices": n,
                "num_envs": per_device * n,
                "total_steps": config.total_steps * n // devices,
            }
            points.append(point(setup, FIGURE, "devices", name, name, overrides, max_devices if setup.quick else n))
    return points


def point(
    setup: Setup,
    figure: str,
    sweep: str,
    benchmark: str,
    name: str,
    overrides: Mapping[str, Any],
    process_devices: int | None = None,
) -> Point:
    """Config `name` with `overrides` (`num_devices` among them), for whole dispatches: 3 of them with `quick`.

    The dispatch length is the one the config's own run would take, fixed so
    that the point's budget of whole dispatches does not change it. It runs in
    a process with `process_devices` devices (default: `num_devices`). A
    population's point also records its `members`.
    """
    config = figure_configs.load_named(name, overrides)
    updates_per_dispatch = anakin_settings.updates_per_dispatch(config)
    steps_per_dispatch = updates_per_dispatch * anakin_settings.steps_per_update(config)
    dispatches = QUICK_DISPATCHES if setup.quick else math.ceil(config.total_steps / steps_per_dispatch)
    overrides = {**overrides, "updates_per_dispatch": updates_per_dispatch}
    task = AnakinRun(figure_configs.path(name), {**overrides, "total_steps": dispatches * steps_per_dispatch})
    columns = {
        "env": config.env.name,
        "network": figure_configs.network_label(config),
        "devices": config.num_devices,
        "num_envs": config.num_envs,
        "unroll_length": config.unroll_length,
    }
    if members := population.size(config):
        columns["members"] = members
    launch = setup.launch(process_devices or config.num_devices, config.cpu_threads)
    return Point(figure, sweep, benchmark, launch, task, columns)


def scaling_efficiency(rate: float, devices: int, rate_on_one: float) -> float:
    """FPS(n) / (n FPS(1)): the share of linear scaling that `devices` devices reach."""
    return rate / (devices * rate_on_one)


def with_efficiency(rows: Sequence[Row]) -> list[Row]:
    """`rows` with each figure-4a row's scaling efficiency against its benchmark's 1-device row (if measured)."""
    on_one = {row.benchmark: row.median for row in rows if row.figure == FIGURE and row.devices == 1}
    return [
        dataclasses.replace(row, efficiency=scaling_efficiency(row.median, row.devices, on_one[row.benchmark]))
        if row.figure == FIGURE and row.benchmark in on_one
        else row
        for row in rows
    ]
