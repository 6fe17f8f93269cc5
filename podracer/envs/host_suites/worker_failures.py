"""How a worker pool's failures read, and how its workers are ended when one fails (`worker_pool`).

An exception in an environment comes back naming the environment (environment
i runs in worker i) and the original error; a worker that gave no answer
within the timeout is named as hung; a worker process that died is named with
its exit code or signal. Ending the workers after a failure cannot wait for
their answer, which may never come, so it is done from the outside.
"""

import multiprocessing
import multiprocessing.connection
import signal

from gymnasium.vector import AsyncVectorEnv


def diagnose(vec: AsyncVectorEnv, where: str, call: str, error: Exception, timeout: float) -> str:
    """What went wrong in `call`, and in which environments (environment i runs in worker i), for a message.

    `where` names the environment; `timeout` is how long `call` waited, in seconds.
    """
    pipes, processes, num_envs = vec.parent_pipes, vec.processes, vec.num_envs
    raised = [i for i, pipe in enumerate(pipes) if pipe is None]  # Gymnasium drops the pipes of those that raised.
    if raised:
        return f"{where}: environment {_listed(raised)} of {num_envs} raised in {call}: {error}"
    if isinstance(error, multiprocessing.TimeoutError):
        silent = [i for i, pipe in enumerate(pipes) if not pipe.poll()]
        return (
            f"{where}: environment {_listed(silent)} of {num_envs} gave no answer to {call} within "
            f"{timeout:g} s (step_timeout_seconds): hung, or slower than the timeout allows."
        )
    multiprocessing.connection.wait([p.sentinel for p in processes], timeout=1.0)  # Let a dying worker exit.
    dead = [f"{i} ({_exit_reason(p.exitcode)})" for i, p in enumerate(processes) if p.exitcode is not None]
    if dead:
        return f"{where}: the worker process of environment {', '.join(dead)} of {num_envs} died in {call}."
    return f"{where}: {call} failed: {type(error).__name__}: {error}"


def close(vec: AsyncVectorEnv) -> None:
    """Closes every environment of `vec` and ends its workers; terminates them if one died since the last call."""
    try:
        vec.close()  # Each worker closes its environment and exits.
    except (EOFError, OSError):  # A worker died since the last step.
        terminate(vec)


def terminate(vec: AsyncVectorEnv) -> None:
    """Ends every worker of `vec` without waiting for its answer, and releases the pipes.

    `vec.close` would first wait for the pending call, which fails again (or
    hangs) for a dead or hung worker, so this does its job from the outside.
    """
    for process in vec.processes:
        if process.is_alive():
            process.terminate()
    for process in vec.processes:
        process.join(timeout=5.0)
        if process.is_alive():  # Ignored SIGTERM.
            process.kill()
            process.join()
    for pipe in vec.parent_pipes:
        if pipe is not None:
            pipe.close()
    vec.closed = True


def _listed(indices: list[int]) -> str:
    return ", ".join(map(str, indices))


def _exit_reason(exitcode: int) -> str:
    return f"killed by {signal.Signals(-exitcode).name}" if exitcode < 0 else f"exit code {exitcode}"
