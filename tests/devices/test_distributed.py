"""Replicas across processes: a pod of local processes joined by `jax.distributed` with gloo collectives.

Each test starts 2 processes x 2 forced CPU devices on loopback, as
`python -m scripts.launch_local` does (running `tests/programs/train_in_pod.py`); the
final parameters must be bitwise identical in every process, and losing a
process must end the others, never hang them.
"""

import json
import signal
import subprocess
import sys

import pytest

from tests.helpers import HANG_SECONDS, finish, last_json_line, run, start_pod, wait_until

CASES = {
    "anakin": ("anakin_catch", {"num_envs": 32, "updates_per_dispatch": 20, "total_steps": 32 * 16 * 20 * 2}),
    "sebulba": (
        "sebulba_cartpole_impala",
        {
            "envs_per_thread": 4,
            "unroll_length": 8,
            "total_steps": 8 * 4 * 2 * 2 * 4,
            "log_every_updates": 2,
            "actor_device_ids": (0,),
            "learner_device_ids": (1,),
        },
    ),
}


@pytest.mark.slow  # A pod of two fresh processes, 14 s. Anakin's pod: tests/anakin/test_resume.py's killed pod.
def test_two_sebulba_processes_train_to_bitwise_identical_parameters(tmp_path):
    name, overrides = CASES["sebulba"]
    pod = start_pod("train_in_pod", 2, 2, args=(name, json.dumps(overrides), str(tmp_path)))
    results = [last_json_line(stdout) for stdout, _ in finish(pod)]
    assert sorted(r["process"] for r in results) == [0, 1]
    assert all(r["devices"] == 4 for r in results)
    assert results[0]["digest"] == results[1]["digest"]
    assert results[0]["steps"] == results[1]["steps"] == overrides["total_steps"]
    # Only process 0 writes logs: one record per log step, for the whole job.
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert records[-1]["step"] == overrides["total_steps"] and records[-1]["steps_per_second"] > 0


@pytest.mark.slow  # A pod of processes through the launcher, about 16 s; the pod tests above cover training.
def test_launch_local_reports_the_job_once(tmp_path):
    launcher = [sys.executable, "-m", "scripts.launch_local", "--processes", "2", "--devices-per-process", "2", "--"]
    train = ["--config", "configs/anakin_catch.py", "--config.num_envs=32", "--config.total_steps=20480"]
    result = run([*launcher, *train, "--noprogress", "--workdir", str(tmp_path)])
    assert result.returncode == 0, result.stdout[-3000:]
    done = [line for line in result.stdout.splitlines() if "done:" in line]
    assert len(done) == 1 and done[0].startswith("[0] ") and "on 4 devices in 2 processes" in done[0]
    assert "steps/s" in done[0]


@pytest.mark.slow  # 15 s: a pod of two processes and a heartbeat timeout.
def test_losing_a_process_ends_the_others_with_an_error(tmp_path):
    name, overrides = CASES["anakin"]
    overrides = dict(overrides, total_steps=10**9)
    heartbeat = {"PODRACER_HEARTBEAT_TIMEOUT_SECONDS": "5"}
    pod = start_pod("train_in_pod", 2, 2, args=(name, json.dumps(overrides), str(tmp_path)), env=heartbeat)
    metrics = tmp_path / "metrics.jsonl"
    wait_until(lambda: metrics.exists() and metrics.read_text(), "a log record (both processes train)", pod)
    pod[1].send_signal(signal.SIGKILL)
    try:
        _, stderr = pod[0].communicate(timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail("process 0 kept running after process 1 died")  # The test's end kills it.
    assert pod[0].returncode != 0, stderr[-2000:]
    assert "stopped sending heartbeats" in stderr  # JAX's coordination service names the lost process.
