"""Phase clocks and the time shares of a log window, on synthetic timings: clipped to the window by construction."""

import pytest

from podracer.sebulba.phase_clock import PhaseClock, Reading, shares

READ = "read"


def play(timeline: list[tuple[float, str | None]]) -> list[Reading]:
    """A clock driven through `timeline`, in time order: at each time it enters the phase named (None: no phase), or
    is read (`READ`). Returns the readings."""
    now = [0.0]
    clock = PhaseClock(("env", "inference", "compiled", "wait"), lambda: now[0])
    readings = []
    for when, event in timeline:
        now[0] = when
        if event == READ:
            readings.append(clock.read())
        else:
            clock.enter(event)
    return readings


def test_a_phase_under_way_when_the_window_opens_counts_only_its_part_inside():
    # A compiled rollout begins at 0, the window opens at 3, the rollout ends at 5, the window closes at 7.
    opened, closed = play([(0.0, "compiled"), (3.0, READ), (5.0, "wait"), (7.0, READ)])
    assert shares(opened, closed) == {"env": 0.0, "inference": 0.0, "compiled": 0.5, "wait": 0.5}


def test_a_phase_still_under_way_when_the_window_closes_counts_only_up_to_the_close():
    timeline = [(0.0, "wait"), (0.0, READ), (1.0, "inference"), (2.0, "env"), (3.0, None), (4.0, "compiled")]
    opened, closed = play([*timeline, (8.0, READ), (9.0, None)])
    assert shares(opened, closed) == {"env": 1 / 8, "inference": 1 / 8, "compiled": 4 / 8, "wait": 1 / 8}
    # Time outside every phase (bookkeeping from 3 to 4) belongs to no share.
    assert sum(shares(opened, closed).values()) == pytest.approx(7 / 8)


def test_shares_of_windows_that_tile_a_run_add_up_to_the_run_s_time_in_each_phase():
    edges = play(
        [(0.0, "wait"), (1.0, READ), (2.5, "compiled"), (4.0, READ), (6.0, "wait"), (6.5, "compiled")]
        + [(7.0, READ), (10.0, READ)]
    )
    windows = [shares(a, b) for a, b in zip(edges, edges[1:], strict=False)]
    assert windows[0] == {"env": 0.0, "inference": 0.0, "compiled": 1.5 / 3, "wait": 1.5 / 3}
    assert windows[1] == pytest.approx({"env": 0.0, "inference": 0.0, "compiled": 2.5 / 3, "wait": 0.5 / 3})
    assert windows[2] == {"env": 0.0, "inference": 0.0, "compiled": 1.0, "wait": 0.0}
    compiled = sum(window["compiled"] * 3 for window in windows)
    assert compiled == pytest.approx((6.0 - 2.5) + (10.0 - 6.5))


def test_shares_stay_in_unit_range_and_sum_to_at_most_one_whatever_float_rounding_does():
    opened = Reading(0.0, {"a": 0.0, "b": 0.0})
    closed = Reading(1e-9, {"a": 0.7e-9, "b": 0.3000001e-9})  # Rounding past the window's length.
    result = shares(opened, closed)
    assert all(0.0 <= share <= 1.0 for share in result.values())
    assert sum(result.values()) <= 1.0
    assert shares(opened, Reading(0.0, {"a": 0.0, "b": 0.0})) == {"a": 0.0, "b": 0.0}  # An empty window.


def test_an_unknown_phase_is_refused():
    with pytest.raises(ValueError, match="unknown phase 'sleep'"):
        PhaseClock(("wait",)).enter("sleep")
