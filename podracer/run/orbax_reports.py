"""Orbax's own reports of a save or restore that failed midway, held back where podracer says the failure itself.

When a checkpoint cannot be read, or a save finds the disk full, podracer
says so in a line or a few (`podracer.run.checkpoints`,
`podracer.run.disk_full`). Orbax reports the same failure at length: its
threads log the exception with its traceback (through absl's logger), and the
reads and writes it abandoned finish later into the event loop it has closed.
Each of those prints a "RuntimeError: Event loop is closed" traceback: through
`sys.unraisablehook` (with no object), through asyncio's or
`concurrent.futures`' logger (a callback that failed) or through
`threading.excepthook`; the coroutines of those writes print another when
the interpreter collects them at exit; and a task of orbax's that failed with
the error itself has asyncio log it ("Task exception was never retrieved")
whenever the task is collected, which may be well after the restore. `held`
keeps these back during one save or restore, and lets them through if the
operation succeeds or fails in a way the caller does not explain. After a
failure it explains, the abandoned work may finish at any later time, so its
reports stay held back for the rest of the process; nothing else raises into a
loop orbax closed.
"""

import contextlib
import gc
import logging
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

LOGGER = "absl"  # Orbax logs through absl, whose records go to this Python logger.
CALLBACK_LOGGERS = ("asyncio", "concurrent.futures")  # Where a callback into a closed loop is reported.
ORBAX_CODE = "/orbax/"  # In the file name of every module of orbax's.


@contextlib.contextmanager
def held(explained: Callable[[Exception], bool]) -> Iterator[None]:
    """Holds orbax's reports inside the `with`; drops them if it raises an error `explained(error)` accepts.

    After such a failure the abandoned coroutines are collected here, while
    the interpreter can still finalise them quietly, not at exit, and the
    reports of abandoned work that ends later stay dropped.
    """
    logger, records = logging.getLogger(LOGGER), []

    def hold(record: logging.LogRecord) -> bool:
        records.append(record)
        return False

    logger.addFilter(hold)
    restore_late_reports = _drop_late_reports()
    failure = None
    try:
        yield
    except Exception as error:
        failure = error
        raise
    finally:
        logger.removeFilter(hold)
        if failure is not None and explained(failure):
            gc.collect()
        else:
            for record in records:
                logger.handle(record)
            restore_late_reports()


def _drop_late_reports() -> Callable[[], None]:
    """Drops the reports of work orbax abandoned, wherever they are printed; returns what puts things back."""
    loggers = [logging.getLogger(name) for name in CALLBACK_LOGGERS]
    for callback_logger in loggers:
        callback_logger.addFilter(_not_abandoned_work)
    previous_unraisable, previous_thread = sys.unraisablehook, threading.excepthook
    sys.unraisablehook = _unless(_abandoned, previous_unraisable)
    threading.excepthook = _unless(lambda arguments: _into_closed_loop(arguments.exc_value), previous_thread)

    def restore() -> None:
        for callback_logger in loggers:
            callback_logger.removeFilter(_not_abandoned_work)
        sys.unraisablehook, threading.excepthook = previous_unraisable, previous_thread

    return restore


def _into_closed_loop(error: BaseException | None) -> bool:
    """Whether `error` is what work finishing into an event loop that was closed raises."""
    return isinstance(error, RuntimeError) and str(error) == "Event loop is closed"


def _raised_in_orbax(error: BaseException) -> bool:
    """Whether `error` was raised through orbax's own code (a frame of its traceback is in an orbax file)."""
    frame = error.__traceback__
    while frame is not None:
        if ORBAX_CODE in frame.tb_frame.f_code.co_filename:
            return True
        frame = frame.tb_next
    return False


def _not_abandoned_work(record: logging.LogRecord) -> bool:
    """A logging filter: False for a record whose exception is a callback into a closed loop, or an error raised
    through orbax's code (the failure already said, reported again by a task collected late)."""
    error = record.exc_info[1] if record.exc_info else None
    return error is None or not (_into_closed_loop(error) or _raised_in_orbax(error))


def _abandoned(unraisable) -> bool:
    """Whether an unraisable exception reports work orbax abandoned: a callback into its closed loop (no object),
    or one of its coroutines collected unfinished."""
    if unraisable.object is None:
        return _into_closed_loop(unraisable.exc_value)
    code = getattr(unraisable.object, "cr_code", None) if isinstance(unraisable.object, types.CoroutineType) else None
    return bool(code and ORBAX_CODE in code.co_filename)


def _unless(dropped: Callable[[Any], bool], hook: Callable[[Any], None]) -> Callable[[Any], None]:
    """The hook `hook` (`sys.unraisablehook`, `threading.excepthook`), except for the reports `dropped` accepts."""

    def unless_dropped(report: Any) -> None:
        if not dropped(report):
            hook(report)

    return unless_dropped
