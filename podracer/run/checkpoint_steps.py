"""A dispatch loop's checkpoint steps: resume a run from its newest checkpoint; after a dispatch, save and stop.

Anakin's training loop and the meta-trainer's share them; Sebulba's learner
uses `agree`. Every process of a job must decide alike whether to save and
whether to stop, or the collectives of the next step would wait forever for
a process that left; `agree` takes those decisions from process 0 (and a stop
from any process).
"""

import signal
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from jax.experimental import multihost_utils

from podracer.run.checkpoints import Checkpointer
from podracer.run.stopping import StoppedBySignal


def agree(save_due: bool, stop_requested: bool, seconds: float = 0.0) -> tuple[bool, bool, float]:
    """`(save, stop, seconds)` the same on every process of a job.

    Process 0's schedule decides the save, a stop requested on any process
    stops every one (and saves), and `seconds` (how long Anakin's dispatch
    took, which decides whether to split it) is process 0's.
    """
    if jax.process_count() == 1:
        return save_due or stop_requested, stop_requested, seconds
    flags = multihost_utils.process_allgather(np.array([save_due, stop_requested, seconds], np.float32))
    stop = bool(flags[:, 1].any())
    return bool(flags[0, 0]) or stop, stop, float(flags[0, 2])


def save_or_stop(
    checkpointer: Checkpointer,
    update: int,
    state: Any,
    record: dict,
    stop_requests: list[int],
    due: bool,
    seconds: float = 0.0,
    on_save: Callable[[], None] | None = None,
    meta: dict | None = None,
) -> float:
    """After a dispatch: a checkpoint of `state` if one is `due` or a stop was asked for, then the stop.

    Every process of the job decides alike (`agree`); `on_save` runs after
    each save (the meta-trainer writes its rule); `meta` goes into the checkpoint's metadata beside the record's
    step and wall time (a PBT run's hyperparameters). Raises `StoppedBySignal`
    for the first signal in `stop_requests` (SIGTERM if another process got
    it); otherwise returns process 0's `seconds`.
    """
    save, stop, seconds = agree(due, bool(stop_requests), seconds)
    if save:
        checkpointer.save(
            update, state, {"step": record["step"], "wall_seconds": record["wall_seconds"], **(meta or {})}
        )
        if on_save is not None:
            on_save()
    if stop:
        signal_number = stop_requests[0] if stop_requests else signal.SIGTERM
        raise StoppedBySignal(signal_number, f"the dispatch under way finished, {checkpointer.where()}, logs flushed")
    return seconds


def restore_into(checkpointer: Checkpointer, run: Any) -> dict | None:
    """Restores the newest readable checkpoint into `run.state` and `run.update`, if there is one; its metadata."""
    restored = checkpointer.restore(run.state)
    if restored is None:
        return None
    run.state, meta = restored
    run.update = meta["update"]
    return meta
