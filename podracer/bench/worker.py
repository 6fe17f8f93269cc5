"""The program that makes measurements, in a fresh process whose devices the benchmark chose.

    python -m podracer.bench.worker TASKS.json RESULTS.json

TASKS.json holds `{"repeats": R, "tasks": [...]}` (see `records.task_to_json`);
each task runs R times, one after another, and RESULTS.json receives one
`{"rates", "unit", "platform"}` per task, in order. JAX's device count and
platform are fixed when it starts, which is why the benchmark starts a
process per device setup (`podracer.bench.launch`). In a pod of processes
every process trains, and process 0 writes the results.
"""

import json
import os
import sys
from collections.abc import Sequence

import jax

import podracer
from podracer.bench import steady
from podracer.bench.envpool_raw import envpool_frames_per_second
from podracer.bench.records import AnakinRun, EnvpoolRun, Task, task_from_json


def measure(task: Task, repeats: int) -> dict:
    """`task` made `repeats` times: its rates, their unit and the platform they ran on."""
    if isinstance(task, EnvpoolRun):
        rates = [
            envpool_frames_per_second(task.env, task.steps, task.threads, task.envs_per_thread) for _ in range(repeats)
        ]
        return {"rates": rates, "unit": "frames/s", "platform": "cpu"}
    rates = []
    for _ in range(repeats):
        config = podracer.load_config(task.config, task.overrides)
        history = podracer.train(config).history
        if isinstance(task, AnakinRun):
            rates.append(steady.anakin_rate(history))
        else:
            rates.append(steady.sebulba_rate(history, task.warmup))
    unit = "steps/s" if isinstance(task, AnakinRun) else "frames/s"
    return {"rates": rates, "unit": unit, "platform": jax.default_backend()}


def main(argv: Sequence[str]) -> int:
    tasks_path, results_path = argv
    with open(tasks_path) as f:
        spec = json.load(f)
    results = [measure(task_from_json(task), spec["repeats"]) for task in spec["tasks"]]
    if jax.process_index() == 0:  # Of a pod; a lone process is process 0.
        partial = f"{results_path}.partial"
        with open(partial, "w") as f:
            json.dump(results, f)
        os.replace(partial, results_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
