"""The Anakin host loop: build and compile once, then dispatch and log.

This is the one place where the host touches an Anakin run: everything between
two log records happens inside the compiled program of
`program.make_dispatch`. Everything that can be wrong with the config, the
environment or the agent surfaces while the program is traced, before
anything is compiled or written.
"""

import time
from collections.abc import Sequence

import jax
import numpy as np
from ml_collections import ConfigDict

from podracer import agents, envs
from podracer import config as config_lib
from podracer.agents import Agent
from podracer.anakin import settings
from podracer.anakin.program import make_dispatch, make_init
from podracer.envs.base import Environment
from podracer.envs.episodes import Completed
from podracer.run import Callback, RunLog, TrainResult, episode_summary
from podracer.topology import device_mesh


def train(
    config: ConfigDict,
    *,
    env: Environment | None = None,
    agent: Agent | None = None,
    workdir: str | None = None,
    callbacks: Sequence[Callback] = (),
) -> TrainResult:
    """Trains with Anakin; call it through `podracer.train`, which validates the config and starts the job first.

    With `config.replicas > 1` every process of the job calls this: the mesh
    spans every process's devices, each holds its own shard of the
    environments, and only process 0 writes logs.
    """
    started = time.perf_counter()
    mesh = device_mesh(settings.devices(config))
    if env is None:
        env = config_lib.make_environment(config, envs.make, config.env.name)
    training_env = envs.wrap_for_training(env)
    num_dispatches = settings.num_dispatches(config)
    if agent is None:
        agent = agents.make(config, num_updates=num_dispatches * config.updates_per_dispatch)
    steps_per_dispatch = settings.steps_per_dispatch(config)

    compile_start = time.perf_counter()
    init = make_init(training_env, agent, config.num_envs, mesh)
    key = jax.random.key(config.seed)
    dispatch = make_dispatch(training_env, agent, config.unroll_length, config.updates_per_dispatch, mesh)
    lowered = dispatch.lower(init.eval_shape(key))  # Traces the agent and the environment: their errors come here.
    state = init(key)
    dispatch = lowered.compile()
    compile_seconds = time.perf_counter() - compile_start

    log = RunLog(workdir, config, num_dispatches * steps_per_dispatch, callbacks, started)
    try:
        last_time = time.perf_counter()
        for index in range(num_dispatches):
            state, (metrics, completed) = dispatch(state)
            metrics, completed = jax.device_get((metrics, completed))  # Waits for the dispatch to finish.
            now = time.perf_counter()
            record = {"step": (index + 1) * steps_per_dispatch, **summarize(metrics, completed)}
            record["steps_per_second"] = steps_per_dispatch / (now - last_time)
            if index == 0:
                record["compile_seconds"] = compile_seconds
            last_time = now
            log.report(record, state)
    finally:
        log.close()
    return TrainResult(state.learner, agent.acting_params(state.learner), log.history, log.total_steps)


def summarize(metrics: dict, completed: Completed) -> dict:
    """One log record from the stacked outputs of K updates: losses averaged, finished episodes pooled."""
    record = episode_summary(Completed(*(np.sum(total) for total in completed)))
    record.update({name: float(np.mean(value)) for name, value in metrics.items()})
    return record
