"""How Sebulba's threads start, wait and stop, so that no run ever hangs.

Every thread runs under `start_worker`: an exception in any of them is recorded
with its traceback and stops the whole run. Every blocking wait goes through
`RunControl.wait`, which polls in short slices, gives up as soon as the run is
stopping (raising `Stopped`, which ends a thread quietly) and raises
`TimeoutError` naming what it waited for once the stall timeout has passed.
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
    """The stop event shared by every thread, and the first failures that set it."""

    def __init__(self, stall_timeout_seconds: float):
        self.stop = threading.Event()
        self.stall_timeout_seconds = stall_timeout_seconds
        self.failures: list[tuple[str, str]] = []  # (thread name, formatted traceback).
        self.stop_signal: int | None = None  # The signal number that asked the run to stop, if any.
        self._lock = threading.Lock()

    def fail(self, thread_name: str, formatted_traceback: str) -> None:
        with self._lock:
            self.failures.append((thread_name, formatted_traceback))
        self.stop.set()

    def request_stop(self, signal_number: int) -> None:
        self.stop_signal = signal_number
        self.stop.set()

    def wait(self, attempt: Callable[[float], T], what: str) -> T:
        """Calls `attempt(timeout)` until it returns a value.

        `attempt` blocks for at most `timeout` seconds and raises `queue.Empty`,
        `queue.Full` or `TimeoutError` when it could not finish in time.
        """
        deadline = time.monotonic() + self.stall_timeout_seconds
        while True:
            if self.stop.is_set():
                raise Stopped
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
        except BaseException:  # noqa: BLE001 -- any failure must reach the main thread.
            control.fail(name, traceback.format_exc())

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
