"""A Sebulba run in three steps: build it, run its threads, shut it down.

`build` (`podracer.sebulba.build`, on the main thread) creates the
environments and the agent and compiles the update, reporting anything wrong
before a thread starts or a file is written. `resume` then restores the
newest checkpoint, if any: the learner state, the parameter version (its
update count) and the keys, exactly; the environments restart with seeds
derived from (seed, number of resumes). The threads (`podracer.sebulba.threads`)
run until the learner finishes, a thread fails or a signal stops the run, and
are shut down whatever happened.
"""

import dataclasses
import queue
import threading
from collections.abc import Sequence

from ml_collections import ConfigDict

from podracer.agents import Agent
from podracer.envs.host import HostEnvFactory
from podracer.offline import experience_log, offline_settings, starting_state
from podracer.offline.experience_log import ExperienceLog
from podracer.offline.starting_state import Start
from podracer.run.checkpoints import Checkpointer
from podracer.run.contract import Callback, RunLog, TrainResult
from podracer.run.finite import NonFiniteError
from podracer.run.stopping import StoppedBySignal
from podracer.sebulba.build import SebulbaRun, build
from podracer.sebulba.threads import log_until_done, shut_down, start_threads


class ThreadFailed(RuntimeError):
    """A Sebulba thread raised; the message carries its name and traceback."""


def train(
    config: ConfigDict,
    *,
    env: HostEnvFactory | None = None,
    agent: Agent | None = None,
    workdir: str | None = None,
    callbacks: Sequence[Callback] = (),
    start: Start | None = None,
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
        workers: list[threading.Thread] = []
        try:
            run, resumed = resume(run, checkpointer)
            if start is not None and resumed is None:  # A resumed run goes on from its own checkpoint.
                run = dataclasses.replace(run, state=starting_state.begin(start, run.state, run.agent, config))
            total_steps = run.num_updates * run.steps_per_update
            log = RunLog(workdir, config, total_steps, callbacks, run.started, resumed, run.compile_seconds)
            reports: queue.Queue = queue.Queue()
            experience = experience_logs(config, run, workdir)  # `logger.dataset`: one per actor thread, or none.
            final_state = start_threads(run, workers, checkpointer, reports, experience)
            try:
                log_until_done(run, workers[-1], log, checkpointer, reports)
            finally:
                log.close()
        finally:
            shut_down(run, workers)
    finally:
        checkpointer.close()
    if run.control.failures:
        name, error, formatted = run.control.failures[0]
        if isinstance(error, NonFiniteError):
            raise error
        raise ThreadFailed(f"Sebulba thread {name!r} failed:\n{formatted}")
    if not final_state:  # A signal stopped the learner.
        raise StoppedBySignal(run.control.stop_signal, f"{run.control.stop_outcome}, threads joined, logs flushed")
    if experience:  # Only a run that made all its updates writes its dataset.
        experience[0].write(*experience[1:])
    return TrainResult(final_state[0], run.agent.acting_params(final_state[0]), log.history, log.total_steps)


def experience_logs(config: ConfigDict, run: SebulbaRun, workdir: str | None) -> list[ExperienceLog]:
    """The dataset logger of each actor thread of a run with `logger.dataset`, from its first rollout on; none
    without."""
    if not offline_settings.records(config):
        return []
    metadata = experience_log.metadata(config, workdir, run.first_update * run.steps_per_update)
    specs = (run.envs[0].observation_spec(), run.envs[0].action_spec())
    return [ExperienceLog(config.logger.dataset, specs, metadata) for _ in run.envs]


def resume(run: SebulbaRun, checkpointer: Checkpointer) -> tuple[SebulbaRun, dict | None]:
    """`run` from the newest readable checkpoint, if there is one (its state, keys and update), and its metadata."""
    restored = checkpointer.restore(run.checkpoint_state(run.state))
    if restored is None:
        return run, None
    state, meta = restored
    resumed = dataclasses.replace(
        run,
        state=state["learner"],
        actor_key=state["actor_key"],
        learner_key=state["learner_key"],
        first_update=meta["update"],
    )
    return resumed, meta
