"""Sebulba never hangs: failures in any thread, stalls and signals all end the run cleanly.

Each case runs `podracer train` in its own interpreter
(`tests/programs/faulty_run.py`), with a fault injected by wrapping a real
function before the run starts. The subprocess timeout is the hang detector.
"""

import json
import os
import signal

import pytest

from tests.helpers import HANG_SECONDS, run_module, start_cli, wait_until

CONFIG = "configs/sebulba_cartpole_impala.py"


@pytest.mark.slow  # Each case is a run in a fresh process, 6-13 s.
@pytest.mark.parametrize(
    "module, attribute, fail_on_call, thread, stepping",
    [
        # The actor thread's own code, around a compiled rollout.
        pytest.param("podracer.sebulba.actor", "Rollout", 3, "actor-", "compiled", id="actor"),
        # An environment stepped from Python, inside an actor.
        pytest.param("podracer.envs.envpool_env", "EnvpoolEnvironment.step", 100, "actor-", "host", id="environment"),
        # The learner thread.
        pytest.param(
            "podracer.sebulba.parameter_versions", "ParameterVersions.publish", 3, "learner", "auto", id="learner"
        ),
    ],
)
def test_a_failure_in_any_thread_ends_the_run_with_its_traceback(
    tmp_path, module, attribute, fail_on_call, thread, stepping
):
    result = run_module(
        "faulty_run",
        *(module, attribute, str(fail_on_call), "raise", str(tmp_path)),
        f"--config.env_stepping={stepping}",
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert f"injected failure in {attribute}" in result.stderr
    assert f"Sebulba thread '{thread}" in result.stderr and "Traceback" in result.stderr
    assert (tmp_path / "metrics.jsonl").exists()  # Logs were flushed and closed.


@pytest.mark.slow  # Waits out a stall timeout in a fresh process: 8 s.
def test_a_stalled_wait_times_out_naming_what_it_waited_for(tmp_path):
    # From the 20th call on, every environment step (from Python) takes 3 s; every wait gives up after 1 s.
    result = run_module(
        "faulty_run",
        *("podracer.envs.envpool_env", "EnvpoolEnvironment.step", "20", "stall", str(tmp_path)),
        *("--config.stall_timeout_seconds=1", "--config.env_stepping=host"),
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "TimeoutError: waited more than 1 s for a rollout from actor thread 0" in result.stderr


@pytest.mark.parametrize(
    "signal_number", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)], ids=["SIGTERM", "SIGINT"]
)
def test_a_signal_finishes_the_update_writes_a_checkpoint_and_exits(tmp_path, signal_number):
    process = start_cli(
        *("train", "--config", CONFIG, "--workdir", str(tmp_path), "--noprogress"),
        *("--config.total_steps=100000000", "--config.log_every_updates=2", "--config.checkpoint.every_minutes=0"),
        f"--config.stop_grace_seconds={HANG_SECONDS}",
    )
    metrics = tmp_path / "metrics.jsonl"
    wait_until(lambda: metrics.exists() and metrics.read_text().count("\n") >= 2, "2 log records", [process])
    process.send_signal(signal_number)
    _, stderr = process.communicate(timeout=HANG_SECONDS)  # Not the 100M steps: the stop's checkpoint is the only one.
    assert process.returncode == 128 + signal_number, stderr[-2000:]
    assert f"stopped by {signal.Signals(signal_number).name}" in stderr and "checkpoint written" in stderr
    (saved,) = os.listdir(tmp_path / "checkpoints")  # No saves by time: the stop's own.
    last_logged = json.loads(metrics.read_text().splitlines()[-1])["update"]
    assert int(saved) >= last_logged  # The update under way when the signal came, logged or not.
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert len(records) >= 2 and records[-1]["step"] > records[0]["step"]
