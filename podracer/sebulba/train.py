"""The Sebulba run: environments on the main thread, actor threads, one learner thread, logs.

The main thread validates the config, creates every envpool environment
(envpool wants them created there), initialises the agent on the learner
devices, starts the threads and then only writes log records until the learner
finishes, a thread fails, or SIGINT / SIGTERM asks the run to stop. Whatever
happens, the threads are stopped and joined, the environments closed and the
logs flushed before `train` returns or raises.
"""

import contextlib
import functools
import math
import queue
import signal
import threading
import time
from typing import Optional

import jax
from jax.sharding import NamedSharding
from ml_collections import ConfigDict

from podracer import config as config_lib
from podracer import distributed
from podracer.agents import make_agent
from podracer.agents.learner import LearnerState
from podracer.envs.envpool_env import make_host_env
from podracer.metrics_writer import MetricsWriter
from podracer.sebulba.actor import make_act, run_actor
from podracer.sebulba.learner import TRAJECTORY_SPEC, make_update, run_learner
from podracer.sebulba.lifecycle import RunControl, start_worker
from podracer.sebulba.parameters import ParameterServer
from podracer.topology import REPLICATED, device_mesh, devices_by_id

JOIN_TIMEOUT_SECONDS = 30.0


class ThreadFailed(RuntimeError):
    """A Sebulba thread raised; the message carries its name and traceback."""


class StoppedBySignal(RuntimeError):
    """SIGINT or SIGTERM stopped the run; it shut down cleanly."""

    def __init__(self, signal_number: int):
        super().__init__(f"stopped by {signal.Signals(signal_number).name}; threads joined, environments closed, logs flushed")
        self.signal_number = signal_number


def train(config: ConfigDict, workdir: Optional[str] = None, show_progress: bool = True) -> tuple[LearnerState, list[dict]]:
    """Trains the agent `config` describes with Sebulba; returns the final learner state and every log record.

    With `config.replicas > 1` every process of the job calls this. Each runs its
    own actors and environments on its own actor devices; the learner mesh spans
    the learner devices of every process, each process's trajectories go to its
    own learner devices, and the update averages gradients over all of them.
    """
    distributed.start(config)
    config_lib.validate(config)
    actor_ids, learner_ids = config_lib.sebulba_device_ids(config)
    actor_devices = devices_by_id(actor_ids)
    learner_mesh = device_mesh(devices_by_id(learner_ids, every_process=True))
    num_actor_threads = len(actor_devices) * config.actor_threads_per_device
    first_thread = jax.process_index() * num_actor_threads  # This process's threads, numbered across the job.
    steps_per_update = config.unroll_length * config.envs_per_thread * num_actor_threads * jax.process_count()
    num_updates = math.ceil(config.total_steps / steps_per_update)

    control = RunControl(config.stall_timeout_seconds)
    envs, threads, writer = [], [], None
    try:
        for index in range(first_thread, first_thread + num_actor_threads):  # On the main thread, as envpool wants.
            envs.append(make_host_env(  # Environment i of the pool gets seed + i: every environment of the job differs.
                config.env.name, config.envs_per_thread, seed=config.seed + index * config.envs_per_thread,
                num_threads=config.envpool_threads, **config.env.kwargs,
            ))
        agent = make_agent(config, envs[0], num_updates=num_updates * config.learner_minibatches)
        params_key, actor_key, learner_key = jax.random.split(jax.random.key(config.seed), 3)
        state = jax.jit(agent.init, out_shardings=NamedSharding(learner_mesh, REPLICATED))(params_key)
        parameters = ParameterServer(actor_devices)
        parameters.publish(0, state.params)
        writer = MetricsWriter(workdir, config, num_updates * steps_per_update, show_progress)
        records: queue.Queue = queue.Queue()
        rollout_queues = [queue.Queue(maxsize=config.queue_size) for _ in range(num_actor_threads)]
        act = make_act(agent.network.apply)
        learner_sharding = NamedSharding(learner_mesh, TRAJECTORY_SPEC)
        for index, env in enumerate(envs):
            threads.append(start_worker(f"actor-{index}", control, functools.partial(
                run_actor,
                env=env,
                device=actor_devices[index // config.actor_threads_per_device],
                act=act,
                parameters=parameters,
                rollouts=rollout_queues[index],
                learner_sharding=learner_sharding,
                control=control,
                key=jax.random.fold_in(actor_key, first_thread + index),
                unroll_length=config.unroll_length,
                policy_lag=config.policy_lag,
                num_rollouts=num_updates,
            )))
        final_state: list[LearnerState] = []
        learner = start_worker("learner", control, functools.partial(
            run_learner,
            state=state,
            update=make_update(agent, learner_mesh, config.learner_minibatches),
            rollout_queues=rollout_queues,
            parameters=parameters,
            control=control,
            key=learner_key,
            num_updates=num_updates,
            log_every=config.log_every_updates,
            log=records.put,
            result=final_state,
        ))
        threads.append(learner)
        history = []
        with _stop_on_signals(control):
            while True:
                alive = learner.is_alive() and not control.stop.is_set()
                with contextlib.suppress(queue.Empty):
                    while True:
                        record = _finish_record(records.get_nowait(), steps_per_update, envs[0].frames_per_step)
                        writer.write(record)
                        history.append(record)
                if not alive:
                    break
                time.sleep(0.05)
    finally:
        control.stop.set()
        for thread in threads:
            thread.join(JOIN_TIMEOUT_SECONDS)
        for env in envs:
            env.close()
        if writer:
            writer.close()
    if control.failures:
        name, formatted = control.failures[0]
        raise ThreadFailed(f"Sebulba thread {name!r} failed:\n{formatted}")
    if control.stop_signal is not None:
        raise StoppedBySignal(control.stop_signal)
    return final_state[0], history


def _finish_record(record: dict, steps_per_update: int, frames_per_step: int) -> dict:
    steps = record.pop("updates") * steps_per_update
    record = {"step": record["update"] * steps_per_update, **record}
    record["steps_per_second"] = steps / record["seconds"]
    record["frames_per_second"] = record["steps_per_second"] * frames_per_step
    return record


@contextlib.contextmanager
def _stop_on_signals(control: RunControl):
    """SIGINT and SIGTERM set the stop event instead of killing the process, so shutdown is clean."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, lambda number, frame: control.request_stop(number)) for s in handled}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
