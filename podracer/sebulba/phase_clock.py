"""Where a thread's time goes: cumulative seconds per phase, read at any instant from another thread.

Each Sebulba thread owns a `PhaseClock` and says which phase it enters
(an actor: waiting, inference, stepping environments, a compiled rollout; the
learner: waiting, learning). A `Reading` is the time and the seconds spent in
each phase up to that instant, the phase under way included. The difference
of two readings is therefore exactly the time spent in each phase between
them: a phase that began before the first reading counts only from it, one
still under way at the second only up to it. A thread is in one phase at a
time, so the shares of the time between two readings (`shares`) each lie in
[0, 1] and sum to at most 1, by construction rather than by luck of timing.
"""

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence


@dataclasses.dataclass(frozen=True)
class Reading:
    """A clock read at `time`: the seconds spent in each phase up to then."""

    time: float
    seconds: dict[str, float]


class PhaseClock:
    """The phases one thread has spent its time in; `enter` from that thread, `read` from any."""

    def __init__(self, phases: Sequence[str], now: Callable[[], float] = time.perf_counter):
        """Counts time to `phases` (none is under way at first); `now` is the clock (a fake one in tests)."""
        self._now = now
        self._seconds = dict.fromkeys(phases, 0.0)
        self._phase: str | None = None
        self._since = now()
        self._lock = threading.Lock()

    def enter(self, phase: str | None) -> None:
        """From now on the thread's time counts to `phase` (None: to no phase, e.g. bookkeeping between phases)."""
        if phase is not None and phase not in self._seconds:
            raise ValueError(f"unknown phase {phase!r}; this clock counts {sorted(self._seconds)}")
        with self._lock:
            now = self._now()
            self._seconds, self._phase, self._since = self._seconds_until(now), phase, now

    def read(self) -> Reading:
        """The time now and the seconds spent in each phase up to now, the phase under way included."""
        with self._lock:
            now = self._now()
            return Reading(now, self._seconds_until(now))

    def _seconds_until(self, now: float) -> dict[str, float]:
        """The seconds spent in each phase up to `now`: those of the phases ended, and the one under way."""
        seconds = dict(self._seconds)
        if self._phase is not None:
            seconds[self._phase] += now - self._since
        return seconds


def shares(start: Reading, end: Reading) -> dict[str, float]:
    """The share of the time from `start` to `end` (two readings of one clock) that went to each phase.

    Each lies in [0, 1] and they sum to at most 1; the clipping only absorbs
    float rounding, since the phases of one thread never overlap.
    """
    elapsed = end.time - start.time
    if elapsed <= 0:
        return dict.fromkeys(end.seconds, 0.0)
    raw = {phase: min(1.0, max(0.0, (end.seconds[phase] - start.seconds[phase]) / elapsed)) for phase in end.seconds}
    total = sum(raw.values())
    return {phase: share / total for phase, share in raw.items()} if total > 1.0 else raw
