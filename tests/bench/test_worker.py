"""Which rate a task asks for, from a run's records (`train` stood in for by one returning hand-made records)."""

import types

import pytest

from podracer.bench import figure_configs, worker
from podracer.bench.records import AnakinRun, MetaTrainRun, SebulbaRun

# Dispatches of 100 steps: the records' own rates leave out a 1 s evaluation after the second and third.
HISTORY = [
    {"step": 100, "wall_seconds": 10.0, "steps_per_second": 10.0, "frames_per_second": 10.0, "seconds": 10.0},
    {"step": 200, "wall_seconds": 12.0, "steps_per_second": 100.0, "frames_per_second": 100.0, "seconds": 1.0},
    {"step": 300, "wall_seconds": 14.0, "steps_per_second": 100.0, "frames_per_second": 100.0, "seconds": 1.0},
]
for record in HISTORY[1:]:
    record["eval_seconds"] = 1.0


@pytest.fixture
def trained(monkeypatch):
    monkeypatch.setattr(worker, "train", lambda config: types.SimpleNamespace(history=[dict(r) for r in HISTORY]))


def test_a_task_asks_for_the_records_own_rates_or_the_wall_clocks(trained):
    catch = figure_configs.path("anakin_catch")
    assert worker.rate(AnakinRun(catch, {})) == (100.0, "steps/s", None)  # The median of the records after the first.
    # From the first evaluation's record (the second): 100 steps in 2 s, half of them evaluating.
    assert worker.rate(AnakinRun(catch, {}, wall_clock=True)) == (50.0, "steps/s", 0.5)
    cartpole = figure_configs.path("sebulba_cartpole_ppo")
    assert worker.rate(SebulbaRun(cartpole, {}, warmup=1)) == (100.0, "frames/s", None)
    assert worker.rate(SebulbaRun(cartpole, {}, warmup=2, wall_clock=True)) == (50.0, "frames/s", 0.5)
    pong = figure_configs.path("sebulba_pong_impala")  # 4 Atari frames a step.
    assert worker.rate(SebulbaRun(pong, {}, warmup=1, wall_clock=True))[:2] == (200.0, "frames/s")


def test_a_wall_clock_tasks_results_hold_its_evaluation_shares(trained):
    catch = figure_configs.path("anakin_catch")
    plain, timed = worker.measure([AnakinRun(catch, {}), AnakinRun(catch, {}, wall_clock=True)], repeats=2)
    assert plain == {"rates": [100.0, 100.0], "unit": "steps/s", "platform": "cpu"}
    assert timed == {"rates": [50.0, 50.0], "unit": "steps/s", "platform": "cpu", "eval_shares": [0.5, 0.5]}


def test_a_meta_training_task_meta_trains_and_asks_for_the_rate_after_the_first_dispatch(monkeypatch):
    loaded = []

    def meta_train(config):
        loaded.append(config)
        return [dict(r) for r in HISTORY]

    monkeypatch.setattr(worker, "meta_train", meta_train)
    monkeypatch.setattr(worker, "train", None)  # Not `train`'s run.
    task = MetaTrainRun(figure_configs.path("anakin_lpg_gridworlds"), {"meta.updates": "6"})
    assert worker.measure([task], repeats=1) == [{"rates": [100.0], "unit": "steps/s", "platform": "cpu"}]
    assert [config.meta.updates for config in loaded] == [6]  # The overrides, as text, read as the field's type.
