"""The Anakin host loop: build and compile once, then dispatch and log.

This is the one place where the host touches an Anakin run: everything between
two log records happens inside the compiled program of
`program.make_dispatch`. Everything that can be wrong with the config, the
environment or the agent surfaces while the program is traced, before
anything is compiled or written.
"""

import dataclasses
import functools
import sys
import time
from collections.abc import Callable, Sequence

import jax
import numpy as np
from jax.sharding import Mesh
from ml_collections import ConfigDict

from podracer import agents, envs
from podracer.agents import Agent
from podracer.anakin import anakin_settings, exploit_explore
from podracer.anakin.anakin_evaluation import make_evaluate
from podracer.anakin.anakin_programs import programs
from podracer.anakin.exploit_explore import PBT
from podracer.anakin.program import AgentFor, AnakinState, over_members
from podracer.anakin.slots import updates_run
from podracer.config import population
from podracer.config.errors import count
from podracer.devices.device_split import anakin_devices, replication_line
from podracer.devices.distributed import is_chief
from podracer.devices.topology import device_mesh
from podracer.envs.base import Environment
from podracer.envs.env_registry import with_config_kwargs
from podracer.envs.episodes import Completed
from podracer.offline import experience_log, offline_settings, starting_state
from podracer.offline.experience_log import ExperienceLog
from podracer.offline.starting_state import Start
from podracer.run import budget, evaluation, finite
from podracer.run.checkpoint_steps import restore_into, save_or_stop
from podracer.run.checkpoints import Checkpointer
from podracer.run.contract import Callback, RunLog, TrainResult, episode_summary
from podracer.run.metrics_writer import MEMBERS
from podracer.run.stopping import stop_signals


@dataclasses.dataclass
class AnakinRun:
    """Everything `build` makes: the run's mesh, its agent(s), its initial state and its compiled dispatch."""

    config: ConfigDict
    mesh: Mesh
    env: Environment  # The environment, unwrapped (the config's, or the one passed in).
    agent_for: AgentFor  # A member's agent from its hyperparameters.
    members: int  # A population's members; 0 for a single run.
    hyperparameters: dict  # The population's varied hyperparameters, `[members]` each ({} for a single run).
    num_updates: int  # Whole updates that cover total_steps.
    updates_per_dispatch: int  # K: the most updates one dispatch runs; shortened when dispatches run too long.
    steps_per_update: int  # Environment steps per update (per member), over every device.
    state: AnakinState
    dispatch: Callable  # The compiled program: (state, hyperparameters, updates) -> (state, outputs).
    evaluate: Callable | None  # The compiled evaluation (`podracer.anakin.anakin_evaluation`); None without evaluation.
    compile_seconds: float
    update: int = 0  # Updates done: a resumed checkpoint's, then each dispatch's.
    experience: ExperienceLog | None = None  # The dataset logger (`logger.dataset`), from the first dispatch on.
    pbt: PBT | None = None  # Population-based training's host state (`population.pbt`); None without.


def train(
    config: ConfigDict,
    *,
    env: Environment | None = None,
    agent: Agent | None = None,
    workdir: str | None = None,
    callbacks: Sequence[Callback] = (),
    start: Start | None = None,
) -> TrainResult:
    """Trains with Anakin; call it through `podracer.train`, which validates the config and starts the job first.

    With `config.replicas > 1` every process of the job calls this: the mesh
    spans every process's devices, each holds its own shard of the
    environments, and only process 0 writes logs.
    """
    started = time.perf_counter()
    checkpointer = Checkpointer(workdir, config)  # Refuses an incompatible checkpoint before anything is built.
    run = build(config, env, agent)
    resumed = restore_into(checkpointer, run)
    if resumed is not None and run.pbt is not None:
        run.hyperparameters = exploit_explore.restore(run.pbt, resumed)
    if start is not None and resumed is None:  # A resumed run goes on from its own checkpoint.
        learner = starting_state.begin(start, run.state.learner, run.agent_for(run.hyperparameters), config)
        run.state = run.state.replace(learner=learner)
    total_steps = run.num_updates * run.steps_per_update
    log = RunLog(workdir, config, total_steps, callbacks, started, resumed, compile_seconds=run.compile_seconds)
    run.experience = start_recording(config, run, workdir)
    try:
        dispatch_until_done(run, log, checkpointer)
    finally:
        log.close()
        checkpointer.close()
    if run.experience is not None:  # Only a run that made all its updates writes its dataset.
        run.experience.write()
    acting_params = over_members(lambda learner, varied: run.agent_for(varied).acting_params(learner), run.members)
    return TrainResult(
        run.state.learner,
        acting_params(run.state.learner, run.hyperparameters),
        log.history,
        log.total_steps * max(run.members, 1),
    )


def build(config: ConfigDict, env: Environment | None, agent: Agent | None) -> AnakinRun:
    """The mesh, the environment and agent (the config's, unless passed in), the initial state and the compiled dispatch.

    Once all of that has worked, says in one line when `total_steps` is not a whole number of updates.
    """
    devices = anakin_devices(config)
    mesh = device_mesh(devices)
    env = env or with_config_kwargs(config, envs.make, config.env.name)
    agents.registry.check_environment(config, env)  # Before anything compiles.
    num_updates = anakin_settings.num_updates(config)
    make_agent = functools.partial(agents.make, num_updates=num_updates)
    agent = agent or make_agent(config)
    evaluation.check_agent(config, agent)  # Before anything compiles.
    agent_for = population.member_agents(config, agent, make_agent)
    members, hyperparameters = population.size(config), population.hyperparameters(config)
    run_programs = programs(config, env, agent_for, mesh)  # A dataset is read and checked here.

    compile_start = time.perf_counter()
    key = population.keys(config)
    init = population.naming_fixed_fields(lambda varied: run_programs.make_init(key, varied), hyperparameters)
    abstract_state = init.eval_shape(key, hyperparameters)  # Its shapes do not depend on which fields vary.
    updates_per_dispatch = anakin_settings.updates_per_dispatch(config)

    def compile_dispatch(varied: dict) -> Callable:  # Errors of agent and environment come here.
        program = run_programs.make_dispatch()
        return program.lower(abstract_state, varied, np.int32(updates_per_dispatch), *run_programs.data).compile()

    compiled = population.naming_fixed_fields(compile_dispatch, hyperparameters)

    def dispatch(state: AnakinState, varied: dict, updates: np.int32) -> tuple:
        return compiled(state, varied, updates, *run_programs.data)

    evaluate = None
    if evaluation.enabled(config):
        evaluate = make_evaluate(env, agent_for, config, mesh, abstract_state, hyperparameters, members)
    state = init(key, hyperparameters)
    announce(config, devices)  # Once everything has compiled: a refused config says only why.
    if (note := anakin_settings.rounding_note(config)) and is_chief():
        print(note, file=sys.stderr)
    return AnakinRun(
        config=config,
        mesh=mesh,
        env=env,
        agent_for=agent_for,
        members=members,
        hyperparameters=hyperparameters,
        num_updates=num_updates,
        updates_per_dispatch=updates_per_dispatch,
        steps_per_update=anakin_settings.steps_per_update(config),
        state=state,
        dispatch=dispatch,
        evaluate=evaluate,
        compile_seconds=time.perf_counter() - compile_start,
        pbt=exploit_explore.start(config, hyperparameters, anakin_settings.steps_per_update(config)),
    )


def dispatch_until_done(run: AnakinRun, log: RunLog, checkpointer: Checkpointer) -> None:
    """Dispatches until the run has made its updates: logs each dispatch, checks it, checkpoints when due.

    Honours SIGINT and SIGTERM after the dispatch under way (and its checkpoint)
    by raising `StoppedBySignal`.
    """
    stop_requests: list[int] = []
    with stop_signals(stop_requests.append):
        last_time = time.perf_counter()
        while run.update < run.num_updates:
            updates = budget.next_stretch(run.update, run.num_updates, run.updates_per_dispatch)
            if run.pbt is not None:
                updates = exploit_explore.until_ready(run.pbt, run.update, updates)
            dispatch_start = time.perf_counter()
            run.state, outputs = run.dispatch(run.state, run.hyperparameters, np.int32(updates))
            metrics, completed, flags, *recorded = jax.device_get(outputs)  # Waits for the dispatch.
            metrics, completed, recorded = updates_run((metrics, completed, recorded), updates, run.members)
            if run.experience is not None:
                run.experience.add(recorded[0])
            now = time.perf_counter()
            record = make_record((run.update + updates) * run.steps_per_update, metrics, completed, run.members)
            record["steps_per_second"] = updates * run.steps_per_update * max(run.members, 1) / (now - last_time)
            evaluation.evaluate_if_due(
                run.evaluate and functools.partial(run.evaluate, run.state.learner, run.hyperparameters),
                run.config,
                record,
                run.update * run.steps_per_update,
                final=run.update + updates >= run.num_updates,
                members=run.members,
            )
            if run.pbt is not None:
                ready = (run.pbt, run.state, run.hyperparameters, completed, run.update + updates, record)
                run.state, run.hyperparameters = exploit_explore.step(*ready)
            log.report(record, run.state)
            each_member = population.members_of((metrics, flags), run.members)
            for member, (member_metrics, member_flags) in enumerate(each_member):
                finite.check(run.update + 1, member_metrics, member_flags, member if run.members else None)
            run.update += updates
            save_and_stop(run, checkpointer, record, stop_requests, now - dispatch_start)
            last_time = time.perf_counter()


def save_and_stop(
    run: AnakinRun, checkpointer: Checkpointer, record: dict, stop_requests: list[int], dispatch_seconds: float
) -> None:
    """After a dispatch: a checkpoint if one is due, a stop if a signal asked for one, a shorter dispatch if too slow.

    Every process of the job decides alike (`agree`), on process 0's clock.
    """
    due = checkpointer.due(run.update) or run.update >= run.num_updates
    meta = exploit_explore.to_meta(run.pbt, run.hyperparameters) if run.pbt is not None else {}
    dispatch_seconds = save_or_stop(
        checkpointer, run.update, run.state, record, stop_requests, due, dispatch_seconds, meta=meta
    )
    limit = run.config.max_dispatch_seconds
    shorter = anakin_settings.shorter_dispatch(run.updates_per_dispatch, dispatch_seconds, limit)
    if shorter != run.updates_per_dispatch and is_chief():
        print(
            f"podracer: a dispatch of {run.updates_per_dispatch} updates took {dispatch_seconds:.1f} s, longer than "
            f"max_dispatch_seconds={limit:g} (a stop signal waits for the dispatch under way); dispatching {shorter} "
            "at a time from now on, which logs more often",
            file=sys.stderr,
        )
    run.updates_per_dispatch = shorter


def start_recording(config: ConfigDict, run: AnakinRun, workdir: str | None) -> ExperienceLog | None:
    """The dataset logger of a run with `logger.dataset`, from its state's timestep on (a resumed run's too)."""
    if not offline_settings.records(config):
        return None
    metadata = experience_log.metadata(config, workdir, run.update * run.steps_per_update)
    specs = (run.env.observation_spec(), run.env.action_spec())
    log = ExperienceLog(config.logger.dataset, specs, metadata)
    log.start(jax.device_get(run.state.timestep))
    return log


def announce(config: ConfigDict, devices: list[jax.Device]) -> None:
    """The run's first line: the devices it replicates over (`device_split.replication_line`)."""
    if is_chief():
        share = count(config.num_envs // len(devices), "environment")
        if offline_settings.from_dataset(config):
            share = f"{count(config.agent.batch_size // len(devices), 'sampled transition')} a gradient step"
        print(replication_line(config, devices, share), file=sys.stderr)


def make_record(step: int, metrics: dict, completed: Completed, members: int) -> dict:
    """The log record of a dispatch; a population's also holds each member's (under `members`) and its summary."""
    record = {"step": step, **summarize(metrics, completed)}
    if members:
        each = enumerate(population.members_of((metrics, completed), members))
        record[MEMBERS] = [{"step": step, "member": i, **summarize(*outputs)} for i, outputs in each]
        record.update(population.summary(record[MEMBERS]))
    return record


def summarize(metrics: dict, completed: Completed) -> dict:
    """One log record from the stacked outputs of K updates: losses averaged, finished episodes pooled."""
    record = episode_summary(Completed(*(np.sum(total) for total in completed)))
    record.update({name: float(np.mean(value)) for name, value in metrics.items()})
    return record
