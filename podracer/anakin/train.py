"""The Anakin host loop: build and compile once, then dispatch and log.

This is the one place where the host touches an Anakin run: everything between
two log records happens inside the compiled program of
`program.make_dispatch`. Everything that can be wrong with the config, the
environment or the agent surfaces while the program is traced, before
anything is compiled or written.
"""

import functools
import signal
import sys
import time
from collections.abc import Sequence

import jax
import numpy as np
from ml_collections import ConfigDict

from podracer import agents, envs
from podracer.agents import Agent
from podracer.anakin import settings
from podracer.anakin.program import make_dispatch, make_init, over_members
from podracer.config import population
from podracer.envs.base import Environment
from podracer.envs.episodes import Completed
from podracer.envs.registry import with_config_kwargs
from podracer.run import finite
from podracer.run.checkpoints import Checkpointer, agree
from podracer.run.contract import Callback, RunLog, TrainResult, episode_summary
from podracer.run.metrics_writer import MEMBERS
from podracer.run.stopping import StoppedBySignal, stop_signals
from podracer.runtime.device_split import anakin_devices
from podracer.runtime.topology import device_mesh


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
    checkpointer = Checkpointer(workdir, config)  # Refuses an incompatible checkpoint before anything is built.
    mesh = device_mesh(anakin_devices(config))
    if env is None:
        env = with_config_kwargs(config, envs.make, config.env.name)
    training_env = envs.wrap_for_training(env)
    num_updates = settings.num_dispatches(config) * config.updates_per_dispatch
    build = functools.partial(agents.make, num_updates=num_updates)
    if agent is None:
        agent = build(config)
    agent_for = population.member_agents(config, agent, build)
    members = population.size(config)  # 0: a single run.
    hyperparameters = population.hyperparameters(config)
    steps_per_update = config.unroll_length * config.num_envs

    compile_start = time.perf_counter()
    key = population.keys(config)
    init = population.naming_fixed_fields(
        lambda varied: make_init(training_env, agent_for, config.num_envs, mesh, key, varied), hyperparameters
    )
    abstract_state = init.eval_shape(key, hyperparameters)  # Its shapes do not depend on which fields vary.

    def compile_dispatch(updates_per_dispatch: int, varied: dict):  # Errors of agent and environment come here.
        dispatch = make_dispatch(
            training_env,
            agent_for,
            config.unroll_length,
            updates_per_dispatch,
            mesh,
            config.check_finite,
            members,
            config.members_in_parallel,
        )
        return dispatch.lower(abstract_state, varied).compile()

    updates_per_dispatch = config.updates_per_dispatch
    dispatch = population.naming_fixed_fields(
        functools.partial(compile_dispatch, updates_per_dispatch), hyperparameters
    )
    state = init(key, hyperparameters)
    compile_seconds = time.perf_counter() - compile_start

    update, resumed = 0, None
    if restored := checkpointer.restore(state):
        state, resumed = restored
        update = resumed["update"]
    log = RunLog(workdir, config, num_updates * steps_per_update, callbacks, started, resumed)
    stop_requests: list[int] = []
    try:
        with stop_signals(stop_requests.append):
            last_time, first_record = time.perf_counter(), True
            while update < num_updates:
                dispatch_start = time.perf_counter()
                state, (metrics, completed, flags) = dispatch(state, hyperparameters)
                metrics, completed, flags = jax.device_get((metrics, completed, flags))  # Waits for the dispatch.
                now = time.perf_counter()
                record = make_record((update + updates_per_dispatch) * steps_per_update, metrics, completed, members)
                record["steps_per_second"] = (
                    updates_per_dispatch * steps_per_update * max(members, 1) / (now - last_time)
                )
                if first_record:  # Of this process: a resumed run compiled again.
                    record["compile_seconds"] = compile_seconds
                first_record = False
                log.report(record, state)
                # Before the state can be checkpointed.
                for member, (member_metrics, member_flags) in enumerate(members_of((metrics, flags), members)):
                    finite.check(update + 1, member_metrics, member_flags, member if members else None)
                update += updates_per_dispatch
                save, stop, dispatch_seconds = agree(
                    checkpointer.due(update) or update >= num_updates, bool(stop_requests), now - dispatch_start
                )
                if save:
                    checkpointer.save(update, state, {"step": record["step"], "wall_seconds": record["wall_seconds"]})
                if stop:
                    raise StoppedBySignal(
                        stop_requests[0] if stop_requests else signal.SIGTERM,
                        f"the dispatch under way finished, {checkpointer.where()}, logs flushed",
                    )
                shorter = settings.shorter_dispatch(updates_per_dispatch, dispatch_seconds, config.max_dispatch_seconds)
                if shorter != updates_per_dispatch:
                    _report_split(updates_per_dispatch, shorter, dispatch_seconds, config.max_dispatch_seconds)
                    updates_per_dispatch, dispatch = shorter, compile_dispatch(shorter, hyperparameters)
                last_time = time.perf_counter()
    finally:
        log.close()
        checkpointer.close()
    acting_params = over_members(lambda learner, varied: agent_for(varied).acting_params(learner), members)
    return TrainResult(
        state.learner, acting_params(state.learner, hyperparameters), log.history, log.total_steps * max(members, 1)
    )


def members_of(tree, members: int) -> list:
    """`[tree]` for a single run; a population's `tree` (leading member axis) as one tree per member."""
    return [jax.tree.map(lambda x, i=i: x[i], tree) for i in range(members)] if members else [tree]


def _report_split(updates: int, shorter: int, seconds: float, limit: float) -> None:
    if jax.process_index() == 0:
        print(
            f"podracer: a dispatch of {updates} updates took {seconds:.1f} s, longer than max_dispatch_seconds="
            f"{limit:g} (a stop signal waits for the dispatch under way); dispatching {shorter} at a time "
            "from now on, which recompiles and logs more often",
            file=sys.stderr,
        )


def make_record(step: int, metrics: dict, completed: Completed, members: int) -> dict:
    """The log record of a dispatch; a population's also holds each member's (under `members`) and its summary."""
    record = {"step": step, **summarize(metrics, completed)}
    if members:
        each = enumerate(members_of((metrics, completed), members))
        record[MEMBERS] = [{"step": step, "member": i, **summarize(*outputs)} for i, outputs in each]
        record.update(population.summary(record[MEMBERS]))
    return record


def summarize(metrics: dict, completed: Completed) -> dict:
    """One log record from the stacked outputs of K updates: losses averaged, finished episodes pooled."""
    record = episode_summary(Completed(*(np.sum(total) for total in completed)))
    record.update({name: float(np.mean(value)) for name, value in metrics.items()})
    return record
