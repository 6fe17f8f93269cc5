"""How Sebulba's threads start, wait and stop, so that no run ever hangs.

Every thread runs under `start_worker`: an exception in any of them is recorded
with its traceback and stops the whole run. Every blocking wait goes through
`RunControl.wait`, which polls in short slices, gives up as soon as the run is
stopping (raising `Stopped`, which ends a thread quietly) and raises
`TimeoutError` naming what it waited for once the stall timeout has passed.
A signal (`RunControl.request_stop`) does not stop the threads at once: the
learner finishes its update, hands its state over for a checkpoint and then
sets `stop` (the main thread sets it itself if that takes too long).
"""

import queue
import threading
import time
import traceback
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_SECONDS = 0.05


class Stopped(Exception):
    """Raised inside a worker thread when the run is stopping; the thread ends without error."""


class RunControl:
    """The stop event shared by every thread, the first failures that set it, and a signal's stop request."""

    def __init__(self, stall_timeout_seconds: float):
        self.stop = threading.Event()  # Every thread ends at its next wait.
        self.stall_timeout_seconds = stall_timeout_seconds
        self.failures: list[tuple[str, BaseException, str]] = []  # (thread name, exception, formatted traceback).
        self.stop_signal: int | None = None  # The signal that asked the learner to save and stop, if any.
        self.stop_requested_at: float | None = None  # Its time.monotonic().
        self.stop_outcome = ""  # After a signal: whether the stop's checkpoint was written.
        self._lock = threading.Lock()

    def fail(self, thread_name: str, error: BaseException, formatted_traceback: str) -> None:
        with self._lock:
            self.failures.append((thread_name, error, formatted_traceback))
        self.stop.set()

    def request_stop(self, signal_number: int) -> None:
        """Asks the learner to finish its update, hand over a checkpoint and stop the run (a signal handler)."""
        if self.stop_signal is None:
            self.stop_signal, self.stop_requested_at = signal_number, time.monotonic()

    def check(self) -> None:
        """Raises `Stopped` if the run is stopping: for loops that go on without waiting (stepping environments)."""
        if self.stop.is_set():
            raise Stopped

    def wait(self, attempt: Callable[[float], T], what: str) -> T:
        """Calls `attempt(timeout)` until it returns a value.

        `attempt` blocks for at most `timeout` seconds and raises `queue.Empty`,
        `queue.Full` or `TimeoutError` when it could not finish in time.
        """
        deadline = time.monotonic() + self.stall_timeout_seconds
        while True:
            self.check()
            try:
                return attempt(POLL_SECONDS)
            except (queue.Empty, queue.Full, TimeoutError):
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"waited more than {self.stall_timeout_seconds:g} s for {what}; "
                        "raise config.stall_timeout_seconds if this step is legitimately slow"
                    ) from None


def start_worker(name: str, control: RunControl, target: Callable, *args) -> threading.Thread:
    """Starts `target(*args)` on a daemon thread whose failure stops the run."""

    def run():
        try:
            target(*args)
        except Stopped:
            pass
        except BaseException as error:  # noqa: BLE001 -- any failure must reach the main thread.
            control.fail(name, error, traceback.format_exc())

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
