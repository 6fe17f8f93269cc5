"""What a benchmark passes along: what to measure and where (`Point`), and what came out (`Row`).

A `Point` is one point of one figure: the measurement (`AnakinRun`,
`SebulbaRun`, `EnvpoolRun` or `MetaTrainRun`, each plain data that travels as JSON to the
process that makes it), the `Launch` of that process, and the columns that
describe the point (its environment, network, swept values). Points with the
same `Launch` are measured in one process, one after another. A `Row` is a
measured point as `bench.csv` holds it: the median of the repetitions, their
spread, and an efficiency where the figure defines one.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class AnakinRun:
    """Train `config` (a config file) with `overrides`; the rate is the median steps/s after the first dispatch.

    With `wall_clock`, the rate is the steps after the first dispatch over the
    wall time they took (`steady.wall_rate`): what the run does between
    dispatches, an evaluation above all, counts against it.
    """

    config: str
    overrides: Mapping[str, Any]
    wall_clock: bool = False


@dataclasses.dataclass(frozen=True)
class SebulbaRun:
    """Train `config` with `overrides`; the rate is frames/s over the log windows after the first `warmup`.

    With `wall_clock`, over the wall time between their records instead of the
    learner's own time (`steady.wall_rate`), as `AnakinRun`'s.
    """

    config: str
    overrides: Mapping[str, Any]
    warmup: int
    wall_clock: bool = False


@dataclasses.dataclass(frozen=True)
class EnvpoolRun:
    """envpool alone: `threads` threads each stepping `envs_per_thread` environments `steps` times, random actions."""

    env: str
    threads: int
    envs_per_thread: int
    steps: int


@dataclasses.dataclass(frozen=True)
class MetaTrainRun:
    """Meta-train `config` with `overrides` (`podracer meta-train`'s run, not `train`'s); the rate is the median inner
    environment steps/s over every member, after the first dispatch, as `AnakinRun`'s."""

    config: str
    overrides: Mapping[str, Any]


Task = AnakinRun | SebulbaRun | EnvpoolRun | MetaTrainRun
TASK_KINDS: dict[str, type] = {
    "anakin": AnakinRun,
    "sebulba": SebulbaRun,
    "envpool": EnvpoolRun,
    "meta_train": MetaTrainRun,
}


def task_to_json(task: Task) -> dict:
    """`task` as JSON-ready data: its fields and its kind."""
    kind = next(name for name, cls in TASK_KINDS.items() if isinstance(task, cls))
    return {"kind": kind, **dataclasses.asdict(task)}


def task_from_json(data: Mapping[str, Any]) -> Task:
    """The task `task_to_json` wrote."""
    fields = dict(data)
    return TASK_KINDS[fields.pop("kind")](**fields)


@dataclasses.dataclass(frozen=True)
class Launch:
    """The process (or local pod of processes) that measures points.

    `devices`: forced CPU devices in each process (`XLA_FLAGS`,
    `JAX_PLATFORMS=cpu`), or None for the machine's own devices.
    `processes` > 1 is a local pod (always forced CPU devices).
    `cpu_threads`: the configs' XLA:CPU threads, part of the key because a
    process sizes its thread pool once, at its first run.
    """

    devices: int | None
    cpu_threads: int
    processes: int = 1


# The columns each sweep varies.
SWEPT = {
    "devices": ("devices",),
    "actor_batch": ("envs_per_thread", "unroll_length"),
    "device_split": ("actor_devices", "learner_devices"),
    "replicas": ("replicas",),
    "members": ("members",),
    "simulations": ("simulations",),
    "pipeline": ("env", "env_stepping"),
    "config": (),
    "evaluation": ("eval_every_records",),
}


@dataclasses.dataclass(frozen=True)
class Point:
    """One point of one figure, before it is measured."""

    figure: str  # The --figures name: 4a, 4b, 4c, pipeline, suites, population, muzero, evaluation, meta.
    sweep: str  # What the figure varies at this point: one of SWEPT.
    benchmark: str  # The config's name (configs/NAME.py), or envpool_random_actions.
    launch: Launch
    task: Task
    columns: Mapping[str, Any]  # The Row fields that describe the point: env, network, devices, swept values.

    def label(self) -> str:
        """The figure, benchmark and swept values: "4a anakin_catch devices=2"."""
        swept = " ".join(f"{name}={self.columns[name]}" for name in SWEPT[self.sweep] if name in self.columns)
        return f"{self.figure} {self.benchmark} {swept}".strip()


@dataclasses.dataclass(frozen=True, kw_only=True)
class Row:
    """One measured point, as one row of bench.csv (the machine's columns are added when written)."""

    figure: str
    sweep: str
    benchmark: str
    env: str
    network: str  # "none" for envpool alone.
    platform: str  # Where it ran: cpu, gpu, tpu.
    devices: int  # Devices in each process; 0 for envpool alone.
    actor_devices: int | None = None
    learner_devices: int | None = None
    replicas: int = 1
    members: int | None = None  # A population's members (Anakin, meta-training), whose total the rates are.
    actor_threads: int | None = None  # Per actor device (Sebulba), or stepping threads (envpool alone).
    envs_per_thread: int | None = None
    unroll_length: int | None = None
    num_envs: int | None = None  # Anakin: environments over every device (each member's, in a population).
    simulations: int | None = None  # A search agent's simulations per action (MuZero).
    env_stepping: str | None = None  # Where the pipeline figure sets config.env_stepping: compiled or host.
    eval_every_records: int | None = None  # The evaluation figure: log records per evaluation, 0 for none.
    median: float
    min: float
    max: float
    repeats: int
    unit: str  # steps/s or frames/s (Atari frames: agent steps x frame skip; one per step elsewhere).
    # 4a: FPS(n) / (n FPS(1)); pipeline: Sebulba / envpool alone; evaluation: the rate / the rate without evaluation.
    efficiency: float | None = None
    # The evaluation figure: the share of the measured wall time spent evaluating (its records' eval_seconds), median.
    eval_share: float | None = None


ROW_COLUMNS = tuple(field.name for field in dataclasses.fields(Row))


@dataclasses.dataclass(frozen=True)
class Setup:
    """What the figures' plans are given: how long to measure, and on which devices."""

    quick: bool  # Fewer points and shorter runs, to check that everything works.
    forced_cpu: bool  # Measure on forced CPU devices (the machine has no accelerator, or --cpu).
    max_devices: int  # The most devices a point may use in one process.
    sebulba_env: str  # The environment of figures 4b and 4c: pong or cartpole.

    def launch(self, devices: int, cpu_threads: int) -> Launch:
        """The process for a point on `devices` devices: that many forced CPU devices, or the machine's own.

        With `quick`, every point runs with XLA's default threads, so that the
        points on the same devices share one process (checking form, not speed).
        """
        return Launch(devices if self.forced_cpu else None, 0 if self.quick else cpu_threads)
