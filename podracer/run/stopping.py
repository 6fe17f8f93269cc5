"""Stopping a run cleanly on SIGINT and SIGTERM, as preemptible machines are stopped, in both architectures.

While `stop_signals` is active, the signals call `request_stop` instead of
killing the process; the run then finishes the work under way (Anakin's
dispatch, Sebulba's update), writes a checkpoint and raises
`StoppedBySignal`, which the command line turns into exit status 128 + the
signal number (130 for SIGINT, 143 for SIGTERM). A signal the process was
started with ignored stays ignored, as Unix programs leave it: a shell ignores
SIGINT for the commands it starts in the background, so that a Ctrl-C meant
for the foreground does not stop them (`nohup` does the same for SIGHUP).
"""

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

HANDLED = (signal.SIGINT, signal.SIGTERM)


class StoppedBySignal(RuntimeError):
    """SIGINT or SIGTERM stopped the run; it shut down cleanly."""

    def __init__(self, signal_number: int, what: str):
        super().__init__(f"stopped by {signal.Signals(signal_number).name}; {what}")
        self.signal_number = signal_number


@contextlib.contextmanager
def stop_signals(request_stop: Callable[[int], None]) -> Iterator[None]:
    """Routes SIGINT and SIGTERM to `request_stop(signal_number)` (only the main thread can take signals).

    Leaves a signal that is ignored as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    routed = [number for number in HANDLED if signal.getsignal(number) is not signal.SIG_IGN]
    previous = {number: signal.signal(number, lambda number, frame: request_stop(number)) for number in routed}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
