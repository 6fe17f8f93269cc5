"""The program that makes measurements, in a fresh process whose devices the benchmark chose.

    python -m podracer.bench.worker TASKS.json RESULTS.json

TASKS.json holds `{"repeats": R, "tasks": [...]}` (see `records.task_to_json`);
the tasks run R rounds, each task once per round, and RESULTS.json receives one
`{"rates", "unit", "platform"}` per task, in order (and a wall-clock task's
`eval_shares`). JAX's device count and
platform are fixed when it starts, which is why the benchmark starts a
process per device setup (`podracer.bench.launch`). In a pod of processes
every process trains, and process 0 writes the results.
"""

import json
import sys
from collections.abc import Sequence

import jax

from podracer.bench import figure_configs, steady
from podracer.bench.figures.envpool_raw import envpool_frames_per_second
from podracer.bench.records import AnakinRun, EnvpoolRun, MetaTrainRun, SebulbaRun, Task, task_from_json
from podracer.config.loading import load
from podracer.experiment.meta_run import meta_train
from podracer.experiment.train import train
from podracer.run.whole_files import write_text


def rate(task: Task) -> tuple[float, str, float | None]:
    """One measurement of `task`: its rate, the rate's unit, and a wall-clock task's share of time spent evaluating."""
    if isinstance(task, EnvpoolRun):
        return envpool_frames_per_second(task.env, task.steps, task.threads, task.envs_per_thread), "frames/s", None
    config = load(task.config, task.overrides)
    if isinstance(task, MetaTrainRun):
        return steady.anakin_rate(meta_train(config)), unit(task), None
    history = train(config).history
    warmup = task.warmup if isinstance(task, SebulbaRun) else 1
    if task.wall_clock:
        value = steady.wall_rate(history, warmup) * figure_configs.frames_per_step(config)
        return value, unit(task), steady.evaluation_share(history, warmup)
    if isinstance(task, AnakinRun):
        return steady.anakin_rate(history), unit(task), None
    return steady.sebulba_rate(history, warmup), unit(task), None


def unit(task: Task) -> str:
    """Anakin's and meta-training's rates are steps/s; Sebulba's and envpool's frames/s (agent steps times Atari's
    frame skip)."""
    return "steps/s" if isinstance(task, AnakinRun | MetaTrainRun) else "frames/s"


def measure(tasks: Sequence[Task], repeats: int) -> list[dict]:
    """Each task made `repeats` times, interleaved (all tasks once, then again): rates, unit and platform for each.

    Interleaving puts the tasks of one process side by side in time, so that a
    ratio of two of them (the pipeline's efficiency, a scaling efficiency)
    compares figures taken under the same load. A wall-clock task's result
    also holds each repeat's share of time spent evaluating (`eval_shares`).
    """
    rates: list[list[float]] = [[] for _ in tasks]
    shares: list[list[float]] = [[] for _ in tasks]
    for _ in range(repeats):
        for index, task in enumerate(tasks):
            value, _, share = rate(task)
            rates[index].append(value)
            if share is not None:
                shares[index].append(share)
    platform = jax.default_backend()  # Only now: a pod's processes start JAX's distributed runtime in `train`.
    return [
        {
            "rates": r,
            "unit": unit(t),
            "platform": "cpu" if isinstance(t, EnvpoolRun) else platform,
            **({"eval_shares": s} if s else {}),
        }
        for r, s, t in zip(rates, shares, tasks, strict=True)
    ]


def main(argv: Sequence[str]) -> int:
    tasks_path, results_path = argv
    with open(tasks_path) as f:
        spec = json.load(f)
    results = measure([task_from_json(task) for task in spec["tasks"]], spec["repeats"])
    if jax.process_index() == 0:  # Of a pod; a lone process is process 0.
        write_text(results_path, json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
