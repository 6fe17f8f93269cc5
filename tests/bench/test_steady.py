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


def records(*steps_and_walls, evaluated=()):
    """Log records at (step, wall_seconds); those whose index is in `evaluated` carry an evaluation."""
    history = [{"step": step, "wall_seconds": wall} for step, wall in steps_and_walls]
    for index in evaluated:
        history[index]["eval_seconds"] = 0.5
    return history


def test_wall_rate_is_the_steps_over_the_wall_time_after_the_warmup_evaluations_included():
    history = records((100, 10.0), (200, 11.0), (300, 12.0), (400, 14.0), (500, 15.0))
    assert steady.wall_rate(history, 1) == pytest.approx(400 / 5.0)  # Not the median of 100, 100, 50, 100.
    assert steady.wall_rate(history, 2) == pytest.approx(300 / 4.0)
    # Every record evaluates: the first one is in the warm-up, the others' time counts.
    assert steady.wall_rate(records(*((100 * n, 1.5 * n) for n in (1, 2, 3)), evaluated=(0, 1, 2)), 1) == (
        pytest.approx(100 / 1.5)
    )
    with pytest.raises(ValueError, match="none after the 5 warm-up records"):
        steady.wall_rate(history, 5)


def test_wall_rate_starts_at_the_first_evaluation_whose_first_call_is_a_warmup():
    history = records((100, 10.0), (200, 11.0), (300, 14.0), (400, 15.0), (500, 16.5), evaluated=(2, 4))
    assert steady.wall_rate(history, 1) == pytest.approx(200 / 2.5)  # From the record of the first evaluation.
    assert steady.wall_rate(history, 4) == pytest.approx(100 / 1.5)  # A later warm-up wins.
    only_last = records((100, 10.0), (200, 11.0), (300, 14.0), evaluated=(2,))  # A run's last record evaluates.
    assert steady.wall_rate(only_last, 1) == pytest.approx(200 / 4.0)


def test_evaluation_share_is_the_evaluations_seconds_over_the_same_span():
    history = records((100, 10.0), (200, 11.0), (300, 14.0), (400, 15.0), (500, 16.5), evaluated=(2, 4))
    assert steady.evaluation_share(history, 1) == pytest.approx(0.5 / 2.5)  # The first evaluation's is left out.
    every = records(*((100 * n, 2.0 * n) for n in (1, 2, 3, 4)), evaluated=(0, 1, 2, 3))
    assert steady.evaluation_share(every, 1) == pytest.approx(3 * 0.5 / 6.0)
    assert steady.evaluation_share(records((100, 1.0), (200, 2.0)), 1) == 0.0
