"""Building a Sebulba run on the main thread: devices, host environments, the agent, its state and compiled update.

`build` checks the device split against the machine, creates every host
environment (envpool wants them created on the main thread), builds the agent,
and compiles the learner's update, so that anything wrong with the config,
the environment or the agent is reported before a thread starts or a file is
written. Whatever fails, the environments it made are closed.
"""

import dataclasses
import functools
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding
from ml_collections import ConfigDict

from podracer import agents, envs
from podracer.agents import Agent, Trajectory
from podracer.devices import per_device
from podracer.devices.device_split import sebulba_device_ids
from podracer.devices.distributed import is_chief
from podracer.devices.topology import REPLICATED, device_mesh, devices_by_id
from podracer.envs import multi_agent
from podracer.envs.env_registry import with_config_kwargs
from podracer.envs.host import HostEnvFactory, HostEnvironment
from podracer.envs.timestep import TimeStep
from podracer.run import evaluation
from podracer.sebulba import sebulba_settings
from podracer.sebulba.learner import TRAJECTORY_SPEC, make_learner_update
from podracer.sebulba.lifecycle import RunControl
from podracer.sebulba.sebulba_evaluation import make_evaluate


@dataclasses.dataclass(frozen=True)
class SebulbaRun:
    """Everything `build` makes: the run's devices, environments, agent, compiled update and initial state.

    A resumed run is another `SebulbaRun` (`dataclasses.replace`) with the checkpoint's state, keys and update.
    What changes while it runs lives elsewhere: the threads' stop and failures in `control`.
    """

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
    evaluate: Callable | None  # The evaluation (`podracer.sebulba.sebulba_evaluation`); None without evaluation.
    first_update: int = 0  # The update count the run starts from: a resumed checkpoint's.

    def checkpoint_state(self, learner_state: Any) -> dict:
        """What a checkpoint holds besides its metadata (the update count, hence the parameter version)."""
        return {"learner": learner_state, "actor_key": self.actor_key, "learner_key": self.learner_key}


@dataclasses.dataclass(frozen=True)
class Compiled:
    """The learner's side of a built run: its initial state, its compiled update and the run's two keys."""

    state: Any
    update: Callable
    actor_key: jax.Array
    learner_key: jax.Array
    seconds: float


def build(config: ConfigDict, make_env: HostEnvFactory | None, agent: Agent | None, resumes: int) -> SebulbaRun:
    """Creates the environments and the agent and compiles the update; closes the environments if anything fails.

    `resumes` counts the earlier starts of this run from a checkpoint; it sets
    the environments' seeds and the actors' keys. Once all of that has worked,
    says in one line when `total_steps` is not a whole number of updates.
    """
    started = time.perf_counter()
    actor_ids, learner_ids = sebulba_device_ids(config)
    actor_devices = devices_by_id(actor_ids)
    learner_mesh = device_mesh(devices_by_id(learner_ids, every_process=True))
    num_threads = len(actor_devices) * config.actor_threads_per_device
    first_thread = jax.process_index() * num_threads
    num_updates = sebulba_settings.num_updates(config, num_threads)
    make_env = make_env or functools.partial(with_config_kwargs, config, envs.host_factory(config.env.name))
    host_envs = make_envs(config, make_env, range(first_thread, first_thread + num_threads), resumes)
    try:
        stepping = sebulba_settings.env_stepping(config, host_envs[0], actor_devices)
        agents.registry.check_environment(config, host_envs[0])  # Before anything compiles.
        agent = agent or agents.make(config, num_updates=num_updates * config.learner_minibatches)
        evaluation.check_agent(config, agent)
        compiled = compile_learner(config, agent, host_envs[0], learner_mesh, num_threads, resumes)
    except BaseException:
        for host_env in host_envs:
            host_env.close()
        raise
    if (note := sebulba_settings.rounding_note(config, num_threads)) and is_chief():
        print(note, file=sys.stderr)
    return SebulbaRun(
        config=config,
        agent=agent,
        envs=host_envs,
        stepping=stepping,
        actor_devices=actor_devices,
        learner_mesh=learner_mesh,
        first_thread=first_thread,
        num_updates=num_updates,
        steps_per_update=sebulba_settings.steps_per_update(config, num_threads),
        state=compiled.state,
        update=compiled.update,
        actor_key=compiled.actor_key,
        learner_key=compiled.learner_key,
        resumes=resumes,
        started=started,
        compile_seconds=compiled.seconds,
        control=RunControl(config.stall_timeout_seconds),
        evaluate=make_evaluate(config, make_env, agent, actor_devices[0]) if evaluation.enabled(config) else None,
    )


def make_envs(config: ConfigDict, make_env: HostEnvFactory, threads: range, resumes: int) -> list[HostEnvironment]:
    """One batch of `config.envs_per_thread` host environments per actor thread; closes those made if one fails."""
    host_envs: list[HostEnvironment] = []
    try:
        for index in threads:
            host_envs.append(
                make_env(config.envs_per_thread, sebulba_settings.env_seed(config, index, len(threads), resumes))
            )
    except BaseException:
        for host_env in host_envs:
            host_env.close()
        raise
    return host_envs


def compile_learner(
    config: ConfigDict, agent: Agent, env: HostEnvironment, mesh: Mesh, num_threads: int, resumes: int
) -> Compiled:
    """The initial learner state on `mesh`, the update compiled for one trajectory per actor thread, and the keys.

    A `PerDevice` part of the state (a replay buffer) gets a leading axis over
    the learner devices. A first start keeps the actor key it always had; a
    resumed one folds in its number of resumes.
    """
    start = time.perf_counter()
    replicated = NamedSharding(mesh, REPLICATED)
    observation_spec, action_spec = env.observation_spec(), env.action_spec()
    params_key, actor_key, learner_key = jax.random.split(jax.random.key(config.seed), 3)

    def init_state(key):
        return per_device.with_device_axis(agent.init(key, observation_spec, action_spec), mesh.size)

    abstract_state = jax.eval_shape(init_state, params_key)
    state_specs = per_device.partition_specs(abstract_state)
    init = jax.jit(init_state, out_shardings=jax.tree.map(lambda spec: NamedSharding(mesh, spec), state_specs))
    trajectory = abstract_trajectory(agent, abstract_state, env, config.unroll_length, mesh)
    key = jax.ShapeDtypeStruct(learner_key.shape, learner_key.dtype, sharding=replicated)
    update = make_learner_update(agent, mesh, config.learner_minibatches, config.check_finite)
    lowered = update.lower(abstract_state, [trajectory] * num_threads, key)  # The agent's errors come here.
    replicate = jax.jit(lambda key: key, out_shardings=replicated)  # Global arrays, in every process.
    if resumes:
        actor_key = jax.random.fold_in(actor_key, resumes)
    state = init(params_key)
    return Compiled(state, lowered.compile(), replicate(actor_key), replicate(learner_key), time.perf_counter() - start)


def abstract_trajectory(agent: Agent, learner_state: Any, env: HostEnvironment, unroll_length: int, mesh: Mesh):
    """The shapes, dtypes and sharding of one actor thread's trajectory as the learner receives it."""
    batch = env.num_envs
    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), batch))
    observation = jax.tree.map(
        lambda spec: jax.ShapeDtypeStruct((batch,) + tuple(spec.shape), jax.dtypes.canonicalize_dtype(spec.dtype)),
        env.observation_spec(),
    )
    scalar = jax.ShapeDtypeStruct((batch, *multi_agent.agent_axis(env)), "float32")  # [B] or [B, N].
    timestep = TimeStep(
        step_type=jax.ShapeDtypeStruct((batch,), "int32"), reward=scalar, discount=scalar, observation=observation
    )

    def act(learner_state, timestep, keys):
        return agent.act_with_state(agent.acting_params(learner_state), timestep, agent.state_for(batch), keys)

    action, extras, state = jax.eval_shape(act, learner_state, timestep, keys)
    sharding = NamedSharding(mesh, TRAJECTORY_SPEC)

    def over_time(length: int):
        def place(x):
            shape = (length, x.shape[0] * jax.process_count()) + tuple(x.shape[1:])
            return jax.ShapeDtypeStruct(shape, x.dtype, sharding=sharding)

        return place

    return Trajectory(
        timestep=jax.tree.map(over_time(unroll_length + 1), timestep),
        action=jax.tree.map(over_time(unroll_length), action),
        extras=jax.tree.map(over_time(unroll_length), extras),
        state=jax.tree.map(over_time(1), state),
    )
