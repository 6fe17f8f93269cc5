"""Which rate a task asks for, from a run's records (`train` stood in for by one returning hand-made records)."""

import types

import pytest

from podracer.bench import configs, worker
from podracer.bench.records import AnakinRun, SebulbaRun

# Dispatches of 100 steps: the records' own rates leave out a 1 s evaluation after the second and third.
HISTORY = [
    {"step": 100, "wall_seconds": 10.0, "steps_per_second": 10.0, "frames_per_second": 10.0, "seconds": 10.0},
    {"step": 200, "wall_seconds": 12.0, "steps_per_second": 100.0, "frames_per_second": 100.0, "seconds": 1.0},
    {"step": 300, "wall_seconds": 14.0, "steps_per_second": 100.0, "frames_per_second": 100.0, "seconds": 1.0},
]


@pytest.fixture
def trained(monkeypatch):
    monkeypatch.setattr(worker, "train", lambda config: types.SimpleNamespace(history=[dict(r) for r in HISTORY]))


def test_a_task_asks_for_the_records_own_rates_or_the_wall_clocks(trained):
    catch = configs.path("anakin_catch")
    assert worker.rate(AnakinRun(catch, {})) == (100.0, "steps/s")  # The median of the records after the first.
    assert worker.rate(AnakinRun(catch, {}, wall_clock=True)) == (50.0, "steps/s")  # 200 steps in 4 s.
    cartpole = configs.path("sebulba_cartpole_ppo")
    assert worker.rate(SebulbaRun(cartpole, {}, warmup=1)) == (100.0, "frames/s")
    assert worker.rate(SebulbaRun(cartpole, {}, warmup=2, wall_clock=True)) == (50.0, "frames/s")  # 100 in 2 s.
    pong = configs.path("sebulba_pong_impala")  # 4 Atari frames a step.
    assert worker.rate(SebulbaRun(pong, {}, warmup=1, wall_clock=True)) == (200.0, "frames/s")
