"""Periodic evaluation's cost (`--figures evaluation`): training steps/s without it, and evaluating every N records.

Anakin trains Catch (`configs/anakin_catch.py`, on its two forced CPU
devices, or on every accelerator) for `DISPATCHES` dispatches of the config's
own length: without evaluation, with an evaluation at every 10th log record,
and at every record (the worst case; Anakin logs once per dispatch). Sebulba
trains CartPole PPO (`configs/sebulba_cartpole_ppo.py`, one actor and one
learner device) without evaluation and at every log window. Each evaluation
plays the default `evaluation.episodes` (32); the run's last record always
evaluates. A record's own `steps_per_second` leaves the evaluation out by
design, so here the rate is the steps over the wall time between the records
after the warm-up and the first evaluation (`steady.wall_rate`: a program's
first call pays a one-off cost), every later evaluation's time counted; the
efficiency is a point's rate over the same benchmark's without evaluation.
Since two runs' rates on a shared machine differ by more than a small cost,
each run also measures the share of its span its evaluations took (their
records' `eval_seconds`, `steady.evaluation_share`), which its load moves less.
Each benchmark's points run in one process, interleaved. Not part of the
default figures; with --quick, 3 dispatches (only the last evaluates every
10 records) and 3 Sebulba windows.
"""

import dataclasses
from collections.abc import Sequence

from podracer.anakin import anakin_settings
from podracer.bench import figure_configs
from podracer.bench.figures import anakin_scaling, population_scaling, sebulba_scaling
from podracer.bench.records import Point, Row, Setup

FIGURE = "evaluation"
SWEEP = "evaluation"
ANAKIN = "anakin_catch"
SEBULBA = "sebulba_cartpole_ppo"
ANAKIN_EVERY = (0, 10, 1)  # Log records per evaluation; 0: none.
SEBULBA_EVERY = (0, 1)
# About the config's own 1M steps (60 of 16,384). The span measured starts at the first evaluation (`steady.wall_rate`):
# every 10 records, the 5 evaluations of the last 50 dispatches; every record, 59 of 59.
DISPATCHES = 60


def plan(setup: Setup) -> list[Point]:
    """Anakin Catch, then Sebulba CartPole, at each of their evaluation frequencies, each in one process."""
    return anakin_points(setup) + sebulba_points(setup)


def anakin_points(setup: Setup) -> list[Point]:
    """Catch on its devices for `DISPATCHES` dispatches (`quick`: 3) without evaluation and every N records."""
    config = figure_configs.load_named(ANAKIN)
    updates_per_dispatch = anakin_settings.updates_per_dispatch(config)
    steps_per_record = updates_per_dispatch * anakin_settings.steps_per_update(config)
    base = {
        "num_devices": population_scaling.devices(setup, config),
        "updates_per_dispatch": updates_per_dispatch,
        "total_steps": DISPATCHES * steps_per_record,
    }
    return [
        counting_evaluation(
            anakin_scaling.point(setup, FIGURE, SWEEP, ANAKIN, ANAKIN, evaluating(base, every, steps_per_record)),
            every,
        )
        for every in ANAKIN_EVERY
    ]


def sebulba_points(setup: Setup) -> list[Point]:
    """CartPole PPO on one actor and one learner device, without evaluation and at every log window."""
    devices = sebulba_scaling.one_actor_one_learner(setup)
    base = sebulba_scaling.split(1, devices)
    config = figure_configs.load_named(SEBULBA, base)
    steps_per_record = sebulba_scaling.updates_per_window(config) * sebulba_scaling.steps_per_update(config)
    return [
        counting_evaluation(
            sebulba_scaling.point(setup, FIGURE, SWEEP, SEBULBA, evaluating(base, every, steps_per_record), devices),
            every,
        )
        for every in SEBULBA_EVERY
    ]


def evaluating(overrides: dict, every_records: int, steps_per_record: int) -> dict:
    """`overrides` with an evaluation every `every_records` records of `steps_per_record` steps (0: none)."""
    return {**overrides, "evaluation.every_steps": every_records * steps_per_record}


def counting_evaluation(point: Point, every_records: int) -> Point:
    """`point` measured by its wall time, evaluations included, and its row naming how often it evaluates."""
    columns = {**point.columns, "eval_every_records": every_records}
    return dataclasses.replace(point, task=dataclasses.replace(point.task, wall_clock=True), columns=columns)


def with_efficiency(rows: Sequence[Row]) -> list[Row]:
    """`rows` with each evaluation row's rate over its benchmark's rate without evaluation (if measured)."""
    off = {row.benchmark: row.median for row in rows if row.figure == FIGURE and row.eval_every_records == 0}
    return [
        dataclasses.replace(row, efficiency=row.median / off[row.benchmark])
        if row.figure == FIGURE and row.benchmark in off
        else row
        for row in rows
    ]


def cost(row: Row) -> str:
    """An evaluation row's cost against no evaluation, from its efficiency: "-3.2%"."""
    return f"{row.efficiency - 1:+.1%}"
