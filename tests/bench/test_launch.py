"""Measuring in a fresh process: results come back through a file, in order; a failed process is reported."""

import pytest

from podracer.bench import launch
from podracer.bench.records import AnakinRun, EnvpoolRun, Launch, Point


def point(task) -> Point:
    return Point("pipeline", "pipeline", "test", Launch(1, cpu_threads=0), task, {"env": "CartPole-v1"})


@pytest.mark.slow  # Two fresh interpreters, about 8 s.
def test_points_are_measured_repeatedly_in_a_fresh_process_and_a_failure_is_reported(capfd):
    tasks = [EnvpoolRun("CartPole-v1", 1, 2, steps=50), EnvpoolRun("CartPole-v1", 2, 4, steps=50)]
    results = launch.measure(Launch(1, cpu_threads=0), [point(task) for task in tasks], repeats=2)
    assert [len(result["rates"]) for result in results] == [2, 2]
    assert all(rate > 0 for result in results for rate in result["rates"])
    assert {(result["unit"], result["platform"]) for result in results} == {("frames/s", "cpu")}

    missing = point(AnakinRun("configs/no_such_config.py", {}))
    with pytest.raises(launch.MeasurementFailed, match="process with 1 forced CPU device .* exited with status 1"):
        launch.measure(Launch(1, cpu_threads=1), [missing], repeats=1)
    assert "no_such_config.py" in capfd.readouterr().err  # The worker's traceback, on this process's stderr.
