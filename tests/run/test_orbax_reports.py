"""Orbax's reports of abandoned work: held back after a failure podracer explains, and only those."""

import logging
import sys
import threading

import pytest

from podracer.run import orbax_reports

CLOSED = RuntimeError("Event loop is closed")


@pytest.fixture
def hooks_restored():
    """Puts back what an explained failure leaves installed for the rest of the process."""
    loggers = [logging.getLogger(name) for name in orbax_reports.CALLBACK_LOGGERS]
    filters = [list(logger.filters) for logger in loggers]
    unraisable, thread = sys.unraisablehook, threading.excepthook
    yield
    for logger, saved in zip(loggers, filters, strict=True):
        logger.filters[:] = saved
    sys.unraisablehook, threading.excepthook = unraisable, thread


def _fail_inside(explained: bool) -> None:
    with pytest.raises(OSError), orbax_reports.held(explained=lambda error: explained):
        raise OSError("the read failed")


def _thread_raising(error: Exception) -> None:
    def raise_it():
        raise error

    thread = threading.Thread(target=raise_it)
    thread.start()
    thread.join()


def test_reports_into_the_closed_loop_after_an_explained_failure_are_dropped_and_others_kept(hooks_restored, caplog):
    reported = []
    threading.excepthook = lambda arguments: reported.append(arguments.exc_value)  # What prints a thread's error.
    _fail_inside(explained=True)
    # Later, as abandoned work ends: a failed callback into the closed loop, logged; then a thread.
    for name in orbax_reports.CALLBACK_LOGGERS:
        logging.getLogger(name).error("exception calling callback", exc_info=(RuntimeError, CLOSED, None))
    _thread_raising(CLOSED)
    assert not caplog.records and not reported

    other = ValueError("a real bug")
    logging.getLogger("concurrent.futures").error("exception calling callback", exc_info=(ValueError, other, None))
    _thread_raising(other)
    assert [record.exc_info[1] for record in caplog.records] == [other] and reported == [other]


def _raised_in_an_orbax_file() -> OSError:
    """An error whose traceback passes through a file of orbax's, as its restore task's does."""
    namespace = {}
    exec(
        compile("def read():\n    raise OSError('DATA_LOSS')\n", "/site-packages/orbax/checkpoint/read.py", "exec"),
        namespace,
    )
    try:
        namespace["read"]()
    except OSError as error:
        return error


def test_a_task_of_orbax_collected_late_is_not_reported_after_an_explained_failure(hooks_restored, caplog):
    """asyncio reports a failed task when it is collected ("Task exception was never retrieved"), however late."""
    error = _raised_in_an_orbax_file()
    _fail_inside(explained=True)
    logging.getLogger("asyncio").error("Task exception was never retrieved", exc_info=(OSError, error, None))
    assert not caplog.records


def test_an_unexplained_failure_puts_every_hook_back(hooks_restored, caplog):
    unraisable, thread = sys.unraisablehook, threading.excepthook
    _fail_inside(explained=False)
    assert (sys.unraisablehook, threading.excepthook) == (unraisable, thread)
    logging.getLogger("asyncio").error("exception in callback", exc_info=(RuntimeError, CLOSED, None))
    orbax_error = _raised_in_an_orbax_file()
    logging.getLogger("asyncio").error("Task exception was never retrieved", exc_info=(OSError, orbax_error, None))
    assert [record.exc_info[1] for record in caplog.records] == [CLOSED, orbax_error]


def test_absl_records_held_inside_are_dropped_when_explained_and_let_through_otherwise(hooks_restored, caplog):
    for explained in (True, False):
        with pytest.raises(OSError), orbax_reports.held(explained=lambda error, explained=explained: explained):
            logging.getLogger(orbax_reports.LOGGER).error("orbax: read %s failed", explained)
            raise OSError("the read failed")
    assert [record.getMessage() for record in caplog.records] == ["orbax: read False failed"]
