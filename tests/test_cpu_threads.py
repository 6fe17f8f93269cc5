"""`config.cpu_threads` sizes XLA:CPU's thread pool, and only where it can."""

import os

import pytest

from tests.helpers import run_module


def _pool_threads(threads: int, when: str = "before", user_setting: str | None = None) -> str:
    result = run_module("count_pool_threads", str(threads), when, env={"PJRT_NPROC": user_setting})
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_cpu_threads_sizes_the_pool_before_jax_starts():
    assert "pool threads: 3" in _pool_threads(3)
    assert "pool threads: 1" in _pool_threads(1)


def test_zero_keeps_one_thread_per_core():
    assert f"pool threads: {len(os.sched_getaffinity(0))}" in _pool_threads(0)


def test_the_users_environment_wins():
    assert "pool threads: 2" in _pool_threads(1, user_setting="2")


def test_too_late_is_a_warning_not_a_silent_no_op():
    output = _pool_threads(3, when="after")
    assert "warning: config.cpu_threads=3 has no effect" in output
    assert f"pool threads: {len(os.sched_getaffinity(0))}" in output


@pytest.mark.slow  # 11 s: two training runs in fresh processes.
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_one_thread_gives_the_same_parameters_on_one_core_and_on_two():
    outputs = []
    for cores in ("0", ",".join(str(core) for core in sorted(os.sched_getaffinity(0)))):
        result = run_module("train_on_cores", cores, env={"PJRT_NPROC": None})
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
