"""Measuring points in fresh processes: one process (or local pod) per `Launch`, its points one after another.

JAX fixes its devices when it starts, so each device setup gets a process of
its own (`python -m podracer.bench.worker`), started with its forced CPU
devices, or as a local pod of processes (`podracer.devices.local_pod`) for replicas.
Points that share a setup share the process, in the order they were planned.
The processes' output goes straight to this one's, so a failure shows its
traceback; the results come back through a file.
"""

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence

from podracer.bench.records import Launch, Point, task_to_json
from podracer.config.errors import count
from podracer.devices import local_pod

WORKER = [sys.executable, "-m", "podracer.bench.worker"]
INTERRUPTED = 130


class MeasurementFailed(RuntimeError):
    """A measuring process exited with an error (its output, above, says why)."""


def by_launch(points: Sequence[Point]) -> dict[Launch, list[Point]]:
    """`points` grouped by their `Launch`, the groups in the order of their first point, each group in order."""
    groups: dict[Launch, list[Point]] = {}
    for point in points:
        groups.setdefault(point.launch, []).append(point)
    return groups


def measure(launch: Launch, points: Sequence[Point], repeats: int, env: Mapping[str, str] | None = None) -> list[dict]:
    """Each of `points` measured `repeats` times in one fresh process (or pod): `{"rates", "unit", "platform"}` each.

    `env` adds environment variables to the process's. Raises
    `MeasurementFailed` if the process (any process of a pod) fails, and
    `KeyboardInterrupt` if it was interrupted.
    """
    with tempfile.TemporaryDirectory(prefix="podracer-bench-") as scratch:
        tasks, results = os.path.join(scratch, "tasks.json"), os.path.join(scratch, "results.json")
        with open(tasks, "w") as f:
            json.dump({"repeats": repeats, "tasks": [task_to_json(point.task) for point in points]}, f)
        command = [*WORKER, tasks, results]
        if launch.processes > 1:
            status = local_pod.run(command, launch.processes, launch.devices, env=env)
        else:
            base = {**os.environ, **(env or {})}
            status = subprocess.run(command, env=worker_env(launch, base)).returncode
        if status == INTERRUPTED:  # Ctrl-C reached the pod, which stopped.
            raise KeyboardInterrupt
        if status != 0:
            raise MeasurementFailed(f"the {describe(launch)} measuring them exited with status {status}")
        with open(results) as f:
            return json.load(f)


def worker_env(launch: Launch, base: Mapping[str, str]) -> dict:
    """`base` for a lone measuring process: with its forced CPU devices, or as it is for the machine's own."""
    return local_pod.forced_cpu_env(launch.devices, base) if launch.devices is not None else dict(base)


def describe(launch: Launch) -> str:
    """The process of `launch` in words: "process with 2 forced CPU devices", "pod of 2 processes with ..."."""
    devices = "the machine's devices" if launch.devices is None else count(launch.devices, "forced CPU device")
    return (
        f"pod of {launch.processes} processes, each with {devices}"
        if launch.processes > 1
        else f"process with {devices}"
    )
