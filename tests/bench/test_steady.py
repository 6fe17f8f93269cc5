"""Steady-state rates from log records, with compilation and warm-up left out, and their spread over repeats."""

import pytest

from podracer.bench import steady


def test_anakin_rate_is_the_median_after_the_first_dispatch():
    history = [{"steps_per_second": 10.0}, {"steps_per_second": 300.0}, {"steps_per_second": 100.0}]
    history.append({"steps_per_second": 200.0})
    assert steady.anakin_rate(history) == 200.0
    assert steady.anakin_rate(history[:1]) == 10.0  # A single dispatch is all there is.


def test_sebulba_rate_is_the_frames_after_the_warmup_over_their_seconds():
    history = [
        {"frames_per_second": 1.0, "seconds": 50.0},  # Warm-up: compilation.
        {"frames_per_second": 100.0, "seconds": 2.0},
        {"frames_per_second": 400.0, "seconds": 1.0},
    ]
    assert steady.sebulba_rate(history, warmup=1) == pytest.approx(600.0 / 3.0)
    with pytest.raises(ValueError, match="none after the 3 warm-up updates"):
        steady.sebulba_rate(history, warmup=3)


def test_spread_is_the_median_smallest_and_largest():
    assert steady.spread([3.0, 1.0, 2.0]) == steady.Spread(median=2.0, min=1.0, max=3.0)
    assert steady.spread([4.0, 1.0]) == steady.Spread(median=2.5, min=1.0, max=4.0)
    with pytest.raises(ValueError):
        steady.spread([])
