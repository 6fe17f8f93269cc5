"""A Sebulba run in three steps: build it, run its threads, shut it down.

`build` (main thread) checks the device split against the machine, creates
every host environment (envpool wants them created on the main thread), builds
the agent, and compiles the learner's update, so that anything wrong with the
config, the environment or the agent is reported before a thread starts or a
file is written. `resume` then restores the newest checkpoint, if any: the
learner state, the parameter version (its update count) and the keys, exactly;
the environments restart with seeds derived from (seed, number of resumes).
`run_threads` starts the actor threads and the learner thread and then logs and
saves checkpoints (orbax runs on the main thread; the learner hands it copies)
until the learner finishes, a thread fails, or SIGINT / SIGTERM asks the run to
stop, which the learner honours after its update and a checkpoint.
`shut_down` stops and joins every thread and closes the environments,
whatever happened.
"""

import contextlib
import dataclasses
import functools
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding
from ml_collections import ConfigDict

from podracer import agents, envs
from podracer.agents import Agent, Trajectory
from podracer.envs.host import HostEnvFactory, HostEnvironment
from podracer.envs.registry import with_config_kwargs
from podracer.envs.timestep import TimeStep
from podracer.run.checkpoints import Checkpointer
from podracer.run.contract import Callback, RunLog, TrainResult
from podracer.run.finite import NonFiniteError
from podracer.run.stopping import StoppedBySignal, stop_signals
from podracer.runtime import per_device
from podracer.runtime.device_split import sebulba_device_ids
from podracer.runtime.topology import REPLICATED, device_mesh, devices_by_id
from podracer.sebulba import settings
from podracer.sebulba.actor import make_send, run_actor
from podracer.sebulba.learner import TRAJECTORY_SPEC, make_learner_update, run_learner
from podracer.sebulba.lifecycle import RunControl, start_worker
from podracer.sebulba.parameter_versions import ParameterVersions
from podracer.sebulba.unroll import make_unroll

JOIN_TIMEOUT_SECONDS = 30.0
# How long after a signal the learner may take to finish its update and hand over a checkpoint. Past it the run
# stops without one (the newest earlier checkpoint stands), so that it ends within a spot VM's 30 s notice.
STOP_GRACE_SECONDS = 20.0


class ThreadFailed(RuntimeError):
    """A Sebulba thread raised; the message carries its name and traceback."""


@dataclasses.dataclass
class SebulbaRun:
    """Everything `build` makes: the run's devices, environments, agent, compiled update and initial state."""

    config: ConfigDict
    agent: Agent
    envs: list[HostEnvironment]  # One batch per actor thread of this process, in thread order.
    stepping: str  # How the actors step them: "compiled" or "host" (config.env_stepping, resolved).
    actor_devices: list[jax.Device]
    learner_mesh: Mesh
    first_thread: int  # This process's first actor thread, numbered across the job.
    num_updates: int
    steps_per_update: int  # Environment steps per update, over the whole job.
    state: Any  # The initial learner state, replicated over the learner mesh.
    update: Callable  # The compiled learner update.
    # Both keys are replicated over the learner mesh. Actor thread i acts with keys folded from
    # fold_in(actor_key, i), where a resumed run's actor_key is fold_in(seed's, resumes); update v
    # learns with fold_in(learner_key, v).
    actor_key: jax.Array
    learner_key: jax.Array
    resumes: int  # How many times this run was resumed from a checkpoint before this start.
    started: float  # When `build` began (time.perf_counter()).
    compile_seconds: float
    control: RunControl
    first_update: int = 0  # The update count the run starts from: a resumed checkpoint's.
    stopped_how: str = ""  # After a signal: whether the stop's checkpoint was written.
    threads: list[threading.Thread] = dataclasses.field(default_factory=list)

    def checkpoint_state(self, learner_state: Any) -> dict:
        """What a checkpoint holds besides its metadata (the update count, hence the parameter version)."""
        return {"learner": learner_state, "actor_key": self.actor_key, "learner_key": self.learner_key}


def train(
    config: ConfigDict,
    *,
    env: HostEnvFactory | None = None,
    agent: Agent | None = None,
    workdir: str | None = None,
    callbacks: Sequence[Callback] = (),
) -> TrainResult:
    """Trains with Sebulba; call it through `podracer.train`, which validates the config and starts the job first.

    With `config.replicas > 1` every process of the job calls this. Each runs its
    own actors and environments on its own actor devices; the learner mesh spans
    the learner devices of every process, each process's trajectories go to its
    own learner devices, and the update averages gradients over all of them.
    """
    checkpointer = Checkpointer(workdir, config)  # Refuses an incompatible checkpoint before anything is built.
    try:
        resumes = checkpointer.newest.get("resumes", 0) + 1 if checkpointer.newest else 0
        run = build(config, env, agent, resumes)
        try:
            resumed = resume(run, checkpointer)
            history, final_state = run_threads(run, workdir, callbacks, checkpointer, resumed)
        finally:
            shut_down(run)
    finally:
        checkpointer.close()
    if run.control.failures:
        name, error, formatted = run.control.failures[0]
        if isinstance(error, NonFiniteError):
            raise error
        raise ThreadFailed(f"Sebulba thread {name!r} failed:\n{formatted}")
    if final_state is None:  # A signal stopped the learner.
        raise StoppedBySignal(run.control.stop_signal, f"{run.stopped_how}, threads joined, logs flushed")
    return TrainResult(
        final_state, run.agent.acting_params(final_state), history, run.num_updates * run.steps_per_update
    )


def build(config: ConfigDict, make_env: HostEnvFactory | None, agent: Agent | None, resumes: int) -> SebulbaRun:
    """Creates the environments and the agent and compiles the update; closes the environments if anything fails.

    `resumes` counts the earlier starts of this run from a checkpoint; it sets
    the environments' seeds and the actors' keys.
    """
    started = time.perf_counter()
    actor_ids, learner_ids = sebulba_device_ids(config)
    actor_devices = devices_by_id(actor_ids)
    learner_mesh = device_mesh(devices_by_id(learner_ids, every_process=True))
    num_threads = len(actor_devices) * config.actor_threads_per_device
    first_thread = jax.process_index() * num_threads
    num_updates = settings.num_updates(config, num_threads)
    if make_env is None:
        make_env = functools.partial(with_config_kwargs, config, envs.host_factory(config.env.name))
    host_envs: list[HostEnvironment] = []
    try:
        for index in range(first_thread, first_thread + num_threads):
            host_envs.append(make_env(config.envs_per_thread, settings.env_seed(config, index, num_threads, resumes)))
        stepping = settings.env_stepping(config, host_envs[0], actor_devices)
        if agent is None:
            agent = agents.make(config, num_updates=num_updates * config.learner_minibatches)
        compile_start = time.perf_counter()
        replicated = NamedSharding(learner_mesh, REPLICATED)
        observation_spec, action_spec = host_envs[0].observation_spec(), host_envs[0].action_spec()
        params_key, actor_key, learner_key = jax.random.split(jax.random.key(config.seed), 3)

        def init_state(key):  # A PerDevice part (a replay buffer) gets a leading axis over the learner devices.
            return per_device.with_device_axis(agent.init(key, observation_spec, action_spec), learner_mesh.size)

        abstract_state = jax.eval_shape(init_state, params_key)
        state_specs = per_device.partition_specs(abstract_state)
        init = jax.jit(
            init_state, out_shardings=jax.tree.map(lambda spec: NamedSharding(learner_mesh, spec), state_specs)
        )
        trajectory = _abstract_trajectory(agent, abstract_state, host_envs[0], config.unroll_length, learner_mesh)
        key = jax.ShapeDtypeStruct(learner_key.shape, learner_key.dtype, sharding=replicated)
        update = make_learner_update(agent, learner_mesh, config.learner_minibatches, config.check_finite)
        lowered = update.lower(abstract_state, [trajectory] * num_threads, key)  # The agent's errors come here.
        replicate = jax.jit(lambda key: key, out_shardings=replicated)  # Global arrays, in every process.
        if resumes:  # A first start keeps the actor keys it always had.
            actor_key = jax.random.fold_in(actor_key, resumes)
        actor_key, learner_key = replicate(actor_key), replicate(learner_key)
        state = init(params_key)
        update = lowered.compile()
        compile_seconds = time.perf_counter() - compile_start
    except BaseException:
        for host_env in host_envs:
            host_env.close()
        raise
    return SebulbaRun(
        config=config,
        agent=agent,
        envs=host_envs,
        stepping=stepping,
        actor_devices=actor_devices,
        learner_mesh=learner_mesh,
        first_thread=first_thread,
        num_updates=num_updates,
        steps_per_update=settings.steps_per_update(config, num_threads),
        state=state,
        update=update,
        actor_key=actor_key,
        learner_key=learner_key,
        resumes=resumes,
        started=started,
        compile_seconds=compile_seconds,
        control=RunControl(config.stall_timeout_seconds),
    )


def resume(run: SebulbaRun, checkpointer: Checkpointer) -> dict | None:
    """Restores the newest readable checkpoint into `run`, if there is one; returns its metadata."""
    restored = checkpointer.restore(run.checkpoint_state(run.state))
    if restored is None:
        return None
    state, meta = restored
    run.state, run.actor_key, run.learner_key = state["learner"], state["actor_key"], state["learner_key"]
    run.first_update = meta["update"]
    return meta


def run_threads(
    run: SebulbaRun,
    workdir: str | None,
    callbacks: Sequence[Callback],
    checkpointer: Checkpointer,
    resumed: dict | None,
) -> tuple[list[dict], Any]:
    """Starts the actor and learner threads, then logs and checkpoints until the learner finishes or the run stops.

    Returns the log records and the final learner state (None if the run stopped early).
    """
    config = run.config
    parameters = ParameterVersions(run.actor_devices)
    parameters.publish(run.first_update, run.agent.acting_params(run.state))
    reports: queue.Queue = queue.Queue()
    rollout_queues = [queue.Queue(maxsize=config.queue_size) for _ in run.envs]
    send = make_send(NamedSharding(run.learner_mesh, TRAJECTORY_SPEC))
    actor_key = run.actor_key.addressable_data(0)  # This process's copy: the actors fold it locally.
    for index, env in enumerate(run.envs):
        device = run.actor_devices[index // config.actor_threads_per_device]
        key = jax.random.fold_in(actor_key, run.first_thread + index)
        actor = functools.partial(
            run_actor,
            unroll=make_unroll(
                run.stepping, env, run.agent, device, key, config.unroll_length, send, run.control.check
            ),
            device=device,
            parameters=parameters,
            rollouts=rollout_queues[index],
            control=run.control,
            policy_lag=config.policy_lag,
            first_rollout=run.first_update,
            num_rollouts=run.num_updates,
        )
        run.threads.append(start_worker(f"actor-{index}", run.control, actor))
    final_state: list = []
    learner = functools.partial(
        run_learner,
        state=run.state,
        update=run.update,
        acting_params=run.agent.acting_params,
        rollout_queues=rollout_queues,
        parameters=parameters,
        control=run.control,
        key=run.learner_key,
        first_version=run.first_update,
        num_updates=run.num_updates,
        log_every=config.log_every_updates,
        checkpoint_due=checkpointer.due,
        report=lambda record, state, save: reports.put((record, state, save)),
        result=final_state,
    )
    run.threads.append(start_worker("learner", run.control, learner))
    run.state = None  # Donated to the learner's first update.

    log = RunLog(workdir, config, run.num_updates * run.steps_per_update, callbacks, run.started, resumed)
    frames_per_step = getattr(run.envs[0], "frames_per_step", 1)
    first_record = True
    try:
        with stop_signals(run.control.request_stop):
            while True:
                alive = run.threads[-1].is_alive() and not run.control.stop.is_set()
                with contextlib.suppress(queue.Empty):
                    while True:
                        record, state, save = reports.get_nowait()
                        if record is not None:
                            record = _finish_record(record, run.steps_per_update, frames_per_step)
                            if first_record:  # Of this process: a resumed run compiled again.
                                record["compile_seconds"], first_record = run.compile_seconds, False
                            log.report(record, state)
                        if save:
                            meta = {"step": state.update * run.steps_per_update, "wall_seconds": log.elapsed()}
                            checkpointer.save(
                                state.update, run.checkpoint_state(state.learner), meta | {"resumes": run.resumes}
                            )
                            run.stopped_how = f"the update under way finished, {checkpointer.where()}"
                if not alive:
                    break
                if _overdue(run.control):
                    run.stopped_how = (
                        f"the learner's update did not finish within {STOP_GRACE_SECONDS:g} s, so it was abandoned "
                        "and the newest earlier checkpoint stands"
                    )
                    run.control.stop.set()
                time.sleep(0.05)
    finally:
        log.close()
    return log.history, (final_state[0] if final_state else None)


def _overdue(control: RunControl) -> bool:
    """Whether a signal's stop has waited longer than `STOP_GRACE_SECONDS` for the learner."""
    requested = control.stop_requested_at
    return requested is not None and time.monotonic() - requested > STOP_GRACE_SECONDS


def shut_down(run: SebulbaRun) -> None:
    """Stops and joins every thread and closes every environment."""
    run.control.stop.set()
    for thread in run.threads:
        thread.join(JOIN_TIMEOUT_SECONDS)
    for env in run.envs:
        env.close()


def _abstract_trajectory(agent: Agent, learner_state: Any, env: HostEnvironment, unroll_length: int, mesh: Mesh):
    """The shapes, dtypes and sharding of one actor thread's trajectory as the learner receives it."""
    batch = env.num_envs
    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), batch))
    observation = jax.tree.map(
        lambda spec: jax.ShapeDtypeStruct((batch,) + tuple(spec.shape), jax.dtypes.canonicalize_dtype(spec.dtype)),
        env.observation_spec(),
    )
    act = lambda state, observation, keys: agent.act(agent.acting_params(state), observation, keys)  # noqa: E731
    action, extras = jax.eval_shape(act, learner_state, observation, keys)
    sharding = NamedSharding(mesh, TRAJECTORY_SPEC)

    def over_time(length: int):
        def place(x):
            shape = (length, x.shape[0] * jax.process_count()) + tuple(x.shape[1:])
            return jax.ShapeDtypeStruct(shape, x.dtype, sharding=sharding)

        return place

    scalar = jax.ShapeDtypeStruct((batch,), "float32")
    timestep = TimeStep(
        step_type=jax.ShapeDtypeStruct((batch,), "int32"), reward=scalar, discount=scalar, observation=observation
    )
    return Trajectory(
        timestep=jax.tree.map(over_time(unroll_length + 1), timestep),
        action=jax.tree.map(over_time(unroll_length), action),
        extras=jax.tree.map(over_time(unroll_length), extras),
    )


def _finish_record(record: dict, steps_per_update: int, frames_per_step: int) -> dict:
    steps = record.pop("updates") * steps_per_update
    record = {"step": record["update"] * steps_per_update, **record}
    record["steps_per_second"] = steps / record["seconds"]
    record["frames_per_second"] = record["steps_per_second"] * frames_per_step
    return record
