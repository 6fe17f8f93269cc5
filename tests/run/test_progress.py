"""The progress bar shows steps, speed and returns; a run from a dataset's, its evaluations' returns once it has one."""

from podracer.run.contract import LogEvent
from podracer.run.progress import ProgressBar


def test_the_bar_shows_the_latest_evaluation_return_once_there_is_one(capsys):
    bar = ProgressBar()
    records = [
        {"step": 10, "steps_per_second": 100.0, "episodes": 0},
        {"step": 20, "steps_per_second": 100.0, "episodes": 0, "eval_mean_return": -150.5},
        {"step": 30, "steps_per_second": 100.0, "episodes": 0},
    ]
    shown = []
    for record in records:
        bar(LogEvent(record, None, total_steps=40))
        shown.append(bar._bar.postfix)
    assert "eval_return" not in shown[0] and "eval_return=-150.500" in shown[1] and "eval_return=-150.500" in shown[2]
    bar(LogEvent({"step": 40, "steps_per_second": 1.0}, None, total_steps=40))
    assert bar._bar is None and bar._eval_return is None  # The next run starts afresh.
