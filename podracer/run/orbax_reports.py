"""Orbax's own reports of a save or restore that failed midway, held back where podracer says the failure itself.

When a checkpoint cannot be read, or a save finds the disk full, podracer
says so in a line or a few (`podracer.run.checkpoints`,
`podracer.run.disk_full`). Orbax reports the same failure at length: its
threads log the exception with its traceback (through absl's logger), the
reads and writes it abandoned finish later into the event loop it has
closed, each printing a "RuntimeError: Event loop is closed" traceback
(through `sys.unraisablehook`, with no object), and the coroutines of those
writes print another when the interpreter collects them at exit. `held`
keeps these back during one save or restore, and lets them through if the
operation succeeds or fails in a way the caller does not explain.
"""

import contextlib
import gc
import logging
import sys
import types
from collections.abc import Callable, Iterator

LOGGER = "absl"  # Orbax logs through absl, whose records go to this Python logger.


@contextlib.contextmanager
def held(explained: Callable[[Exception], bool]) -> Iterator[None]:
    """Holds orbax's reports inside the `with`; drops them if it raises an error `explained(error)` accepts.

    After such a failure the abandoned coroutines are collected here, while
    the interpreter can still finalise them quietly, not at exit.
    """
    logger, records = logging.getLogger(LOGGER), []

    def hold(record: logging.LogRecord) -> bool:
        records.append(record)
        return False

    logger.addFilter(hold)
    previous_hook, sys.unraisablehook = sys.unraisablehook, _skipping_abandoned(sys.unraisablehook)
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
        sys.unraisablehook = previous_hook


def _skipping_abandoned(hook: Callable) -> Callable:
    """`hook`, except for the reports of work orbax abandoned: callbacks into its closed loop, its collected coroutines."""

    def unless_abandoned(unraisable) -> None:
        into_closed_loop = unraisable.object is None and str(unraisable.exc_value) == "Event loop is closed"
        code = (
            getattr(unraisable.object, "cr_code", None) if isinstance(unraisable.object, types.CoroutineType) else None
        )
        if not into_closed_loop and not (code and "/orbax/" in code.co_filename):
            hook(unraisable)

    return unless_abandoned
