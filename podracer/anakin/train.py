"""The Anakin host loop: validate, build, compile once, then dispatch and log.

This is the one place where the host touches a run: everything between two
log steps happens inside the compiled program of `program.make_dispatch`.
"""

import math
import time
from typing import Optional

import jax
import numpy as np
from ml_collections import ConfigDict

from podracer import config as config_lib
from podracer import distributed
from podracer import envs
from podracer.agents import make_agent
from podracer.anakin.program import AnakinState, init_state, make_dispatch
from podracer.metrics_writer import MetricsWriter, episode_summary
from podracer.topology import anakin_devices, device_mesh


def train(config: ConfigDict, workdir: Optional[str] = None, show_progress: bool = True) -> tuple[AnakinState, list[dict]]:
    """Trains the agent `config` describes; returns the final state and every logged record.

    With `config.replicas > 1` every process of the job calls this: the mesh
    spans every process's devices, each holds its own shard of the environments,
    and only process 0 writes logs.
    """
    distributed.start(config)
    config_lib.validate(config)
    env = envs.wrap_for_training(envs.make(config.env.name, **config.env.kwargs))
    mesh = device_mesh(anakin_devices(config.num_devices))
    steps_per_update = config.unroll_length * config.num_envs
    steps_per_dispatch = steps_per_update * config.updates_per_dispatch
    num_dispatches = math.ceil(config.total_steps / steps_per_dispatch)
    agent = make_agent(config, env, num_updates=num_dispatches * config.updates_per_dispatch)

    state = init_state(jax.random.key(config.seed), env, agent, config.num_envs, mesh)
    compile_start = time.perf_counter()
    dispatch = make_dispatch(env, agent, config.unroll_length, config.updates_per_dispatch, mesh)
    dispatch = dispatch.lower(state).compile()
    compile_seconds = time.perf_counter() - compile_start

    writer = MetricsWriter(workdir, config, num_dispatches * steps_per_dispatch, show_progress)
    history = []
    try:
        last_time = time.perf_counter()
        for index in range(num_dispatches):
            state, metrics = dispatch(state)
            metrics = jax.device_get(metrics)  # Waits for the dispatch to finish.
            now = time.perf_counter()
            record = summarize(metrics, step=(index + 1) * steps_per_dispatch)
            record["steps_per_second"] = steps_per_dispatch / (now - last_time)
            if index == 0:
                record["compile_seconds"] = compile_seconds
            last_time = now
            writer.write(record)
            history.append(record)
    finally:
        writer.close()
    return state, history


def summarize(metrics: dict, step: int) -> dict:
    """One log record from the metrics of K updates: losses averaged, finished episodes pooled."""
    totals = [float(np.sum(metrics.pop(name))) for name in ("episodes", "episode_return_sum", "episode_length_sum")]
    record = {"step": step, **episode_summary(*totals)}
    record.update({name: float(np.mean(value)) for name, value in metrics.items()})
    return record
