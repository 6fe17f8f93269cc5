"""A built Sebulba run's threads: start the actors and the learner, log and checkpoint until done, shut down.

`start_threads` starts one actor thread per host environment batch and the
learner thread. `log_until_done` is the main thread's part: it writes the log
records and saves the checkpoints the learner hands over (orbax runs on the
main thread; the learner hands it copies) until the learner finishes, a
thread fails, or SIGINT / SIGTERM asks the run to stop, which the learner
honours after its update and a checkpoint. `shut_down` stops and joins every
thread and closes the environments, whatever happened.
"""

import contextlib
import functools
import queue
import threading
import time
from typing import Any

import jax
from jax.sharding import NamedSharding

from podracer.run import evaluation
from podracer.run.checkpoints import Checkpointer
from podracer.run.contract import RunLog
from podracer.run.stopping import stop_signals
from podracer.sebulba.actor import ActorLoop, make_send, run_actor
from podracer.sebulba.build import SebulbaRun
from podracer.sebulba.learner import TRAJECTORY_SPEC, LearnerLoop, run_learner
from podracer.sebulba.lifecycle import POLL_SECONDS, RunControl, start_worker
from podracer.sebulba.parameter_versions import ParameterVersions
from podracer.sebulba.phase_clock import PhaseClock
from podracer.sebulba.telemetry import ACTOR_PHASES, LEARNER_PHASES
from podracer.sebulba.unroll import make_unroll

JOIN_TIMEOUT_SECONDS = 30.0


def start_threads(
    run: SebulbaRun, workers: list, checkpointer: Checkpointer, reports: queue.Queue, experience: list
) -> list:
    """Starts an actor thread per environment batch and the learner thread, last, which puts its records on
    `reports` and learns from `run.state` (donated to its first update). Each thread joins `workers` as it starts,
    so that `shut_down` joins whichever started. Each actor thread records its rollouts in its dataset logger of
    `experience` (`logger.dataset`; an empty list: none).

    Returns the list the learner appends its final state to when it finishes.
    """
    config = run.config
    parameters = ParameterVersions(run.actor_devices)
    parameters.publish(run.first_update, run.agent.acting_params(run.state))
    rollout_queues = [queue.Queue(maxsize=config.queue_size) for _ in run.envs]
    send = make_send(NamedSharding(run.learner_mesh, TRAJECTORY_SPEC))
    actor_key = run.actor_key.addressable_data(0)  # This process's copy: the actors fold it locally.
    actor_clocks = [PhaseClock(ACTOR_PHASES) for _ in run.envs]
    for index, (env, clock) in enumerate(zip(run.envs, actor_clocks, strict=True)):
        device = run.actor_devices[index // config.actor_threads_per_device]
        key = jax.random.fold_in(actor_key, run.first_thread + index)
        unroll = make_unroll(
            run.stepping, env, run.agent, device, key, config.unroll_length, send, run.control.check, clock
        )
        actor = ActorLoop(
            unroll=unroll,
            device=device,
            parameters=parameters,
            rollouts=rollout_queues[index],
            control=run.control,
            policy_lag=config.policy_lag,
            first_rollout=run.first_update,
            num_rollouts=run.num_updates,
            clock=clock,
            experience=experience[index] if experience else None,
        )
        workers.append(start_worker(f"actor-{index}", run.control, functools.partial(run_actor, actor)))
    final_state: list = []
    learner = LearnerLoop(
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
        clock=PhaseClock(LEARNER_PHASES),
        actor_clocks=actor_clocks,
    )
    workers.append(
        start_worker("learner", run.control, functools.partial(run_learner, learner, run.state, final_state))
    )
    return final_state


def log_until_done(
    run: SebulbaRun, learner: threading.Thread, log: RunLog, checkpointer: Checkpointer, reports: queue.Queue
) -> None:
    """Writes the `learner` thread's records and saves its checkpoints until it finishes or the run stops.

    A signal asks the learner to stop after its update and a checkpoint; if
    that takes longer than `config.stop_grace_seconds`, the run stops without it.
    """
    frames_per_step = getattr(run.envs[0], "frames_per_step", 1)
    previous_step = run.first_update * run.steps_per_update
    with stop_signals(run.control.request_stop):
        while True:
            alive = learner.is_alive() and not run.control.stop.is_set()
            with contextlib.suppress(queue.Empty):
                while True:
                    record, state, save = reports.get_nowait()
                    if record is not None:
                        record = finish_record(record, run.steps_per_update, frames_per_step)
                        evaluation.evaluate_if_due(  # Of the learner state handed over with the record.
                            run.evaluate and functools.partial(run.evaluate, state.learner),
                            run.config,
                            record,
                            previous_step,
                            final=record["step"] >= log.total_steps,
                        )
                        log.report(record, state)
                        previous_step = record["step"]
                    if save:
                        save_checkpoint(run, log, checkpointer, state)
            if not alive:
                return
            if overdue(run.control, run.config.stop_grace_seconds):
                run.control.stop_outcome = (
                    f"the learner's update did not finish within stop_grace_seconds={run.config.stop_grace_seconds:g}"
                    " s, so it was abandoned and the newest earlier checkpoint stands"
                )
                run.control.stop.set()
            time.sleep(POLL_SECONDS)


def save_checkpoint(run: SebulbaRun, log: RunLog, checkpointer: Checkpointer, state: Any) -> None:
    """Saves the learner's state of update `state.update`, with the step, the wall time and the resumes so far."""
    meta = {"step": state.update * run.steps_per_update, "wall_seconds": log.elapsed(), "resumes": run.resumes}
    checkpointer.save(state.update, run.checkpoint_state(state.learner), meta)
    run.control.stop_outcome = f"the update under way finished, {checkpointer.where()}"


def overdue(control: RunControl, grace_seconds: float) -> bool:
    """Whether a signal's stop has waited longer than `grace_seconds` for the learner."""
    requested = control.stop_requested_at
    return requested is not None and time.monotonic() - requested > grace_seconds


def shut_down(run: SebulbaRun, workers: list[threading.Thread]) -> None:
    """Stops and joins every thread of `workers` and closes every environment."""
    run.control.stop.set()
    for thread in workers:
        thread.join(JOIN_TIMEOUT_SECONDS)
    for env in run.envs:
        env.close()


def finish_record(record: dict, steps_per_update: int, frames_per_step: int) -> dict:
    """A learner's window record as logged: its step first, and its steps and frames per second."""
    steps = record.pop("updates") * steps_per_update
    record = {"step": record["update"] * steps_per_update, **record}
    record["steps_per_second"] = steps / record["seconds"]
    record["frames_per_second"] = record["steps_per_second"] * frames_per_step
    return record
