"""The written results: bench.csv (one row per measured point, the machine's columns on every row) and bench.md.

The CSV is for reading back and plotting; the Markdown table is for reading,
with each point's setting in words and the machine it ran on above it.
"""

import csv
import dataclasses
from collections.abc import Sequence

from podracer.bench.figures.population_scaling import per_member
from podracer.bench.machine import MACHINE_COLUMNS, Machine
from podracer.bench.records import ROW_COLUMNS, Row
from podracer.config.errors import count

COLUMNS = ROW_COLUMNS + MACHINE_COLUMNS
MARKDOWN_COLUMNS = ("figure", "sweep", "benchmark", "env", "network", "platform", "setting")
MARKDOWN_RESULTS = ("median", "min", "max", "unit", "repeats", "per member", "evaluating", "efficiency")
NUMBERS = ("median", "min", "max", "repeats", "per member", "evaluating", "efficiency")  # Right-aligned.
DECIMALS = {"median": 1, "min": 1, "max": 1, "efficiency": 4, "eval_share": 4}  # In the CSV.


def write_csv(path: str, rows: Sequence[Row], machine: Machine) -> None:
    """bench.csv: a header of `COLUMNS`, then one line per row; empty cells where a column does not apply.

    Rates are written to 0.1 per second, efficiencies to 4 decimals (`DECIMALS`).
    """
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            values = {**dataclasses.asdict(row), **dataclasses.asdict(machine)}
            writer.writerow({name: _cell(name, value) for name, value in values.items()})


def markdown(rows: Sequence[Row], machine: Machine) -> str:
    """A heading, the machine in a sentence, and a table with one line per row."""
    header = [*MARKDOWN_COLUMNS, *MARKDOWN_RESULTS]
    lines = [
        "# podracer bench",
        "",
        f"{machine.cpu_model}, {machine.cpu_cores} cores, accelerator {machine.accelerator}, "
        f"JAX {machine.jax_version}, podracer {machine.podracer_commit}, "
        f"GLIBC_TUNABLES {machine.glibc_tunables or '(unset)'}. Rates are steady-state (compilation and "
        "warm-up left out): the median of the repeats, with their smallest and largest. Frames are agent steps "
        "times Atari's frame skip of 4 (one per step elsewhere). A population's rates are the total over its "
        "members; per member is its median over their number (meta-training's: its agents' inner environment steps). "
        "Efficiency: figure 4a FPS(n) / (n FPS(1)); "
        "pipeline, Sebulba over envpool alone; evaluation, the rate over the rate without evaluation (these rates "
        "are over the wall time between log records, evaluations included), and evaluating is the share of that "
        "time the evaluations took in each run (median).",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---:" if name in NUMBERS else "---" for name in header) + " |",
    ]
    for row in rows:
        cells = [row.figure, row.sweep, row.benchmark, row.env, row.network, row.platform, setting(row)]
        cells += [f"{row.median:,.0f}", f"{row.min:,.0f}", f"{row.max:,.0f}", row.unit, str(row.repeats)]
        cells.append("" if row.members is None else f"{per_member(row).median:,.0f}")
        cells.append("" if row.eval_share is None else f"{row.eval_share:.1%}")
        cells.append("" if row.efficiency is None else f"{row.efficiency:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def setting(row: Row) -> str:
    """What distinguishes the point, in words: its devices, batch, split, replicas or members, and its evaluation."""
    return _shape(row) + _evaluation(row)


def _shape(row: Row) -> str:
    if row.num_envs is not None:  # Anakin; a population's environments are each member's.
        envs = f"{count(row.members, 'member')} x {row.num_envs} envs" if row.members else f"{row.num_envs} envs"
        return f"{count(row.devices, 'device')}, {envs}, unroll {row.unroll_length}"
    threads = f"{row.actor_threads} threads x {row.envs_per_thread} envs, unroll {row.unroll_length}"
    if row.devices == 0:  # envpool alone.
        return f"{row.actor_threads} threads x {row.envs_per_thread} envs, random actions"
    devices = (
        f"{row.actor_devices} actor + {count(row.learner_devices, 'learner device')}"
        if row.devices > 1
        else "1 device shared by actors and learner"
    )
    replicas = f"{row.replicas} replicas x " if row.replicas > 1 else ""
    search = f", {row.simulations} simulations" if row.simulations else ""
    stepping = f", {row.env_stepping} stepping" if row.env_stepping else ""
    return f"{replicas}{devices}, {threads}{search}{stepping}"


def _evaluation(row: Row) -> str:
    if row.eval_every_records is None:
        return ""
    if row.eval_every_records == 0:
        return ", no evaluation"
    return f", evaluation every {'record' if row.eval_every_records == 1 else count(row.eval_every_records, 'record')}"


def _cell(name: str, value: object) -> object:
    if value is None:
        return ""
    return round(value, DECIMALS[name]) if name in DECIMALS else value
