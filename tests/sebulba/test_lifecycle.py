"""Sebulba never hangs: failures in any thread, stalls and signals all end the run cleanly.

Each case runs `podracer train` in a fresh interpreter: the faults one after
another in one (`tests/programs/faulty_run.py`), each injected by wrapping a
real function before its run starts, and each signal in its own. The
subprocess timeout is the hang detector.
"""

import json
import os
import signal

import pytest

from tests.helpers import HANG_SECONDS, run_module, start_cli, wait_until

CONFIG = "configs/sebulba_cartpole_impala.py"


# A failure injected into a real function: the thread it fails, (module, attribute, from which call), its arguments.
FAILURES = {
    # The actor thread's own code, around a compiled rollout.
    "actor": ("actor-", ("podracer.sebulba.actor", "Rollout", 3), ["--config.env_stepping=compiled"]),
    # The learner thread.
    "learner": ("learner", ("podracer.sebulba.parameter_versions", "ParameterVersions.publish", 3), []),
    # An environment stepped from Python, inside an actor.
    "environment": (
        "actor-",
        ("podracer.envs.host_suites.envpool_env", "EnvpoolEnvironment.step", 100),
        ["--config.env_stepping=host"],
    ),
}
# From the 20th call on, every environment step (from Python) takes 3 s; every wait gives up after 1 s.
STALL = ("podracer.envs.host_suites.envpool_env", "EnvpoolEnvironment.step", 20, "stall")
STALL_ARGS = ["--config.stall_timeout_seconds=1", "--config.env_stepping=host"]


@pytest.mark.slow  # Four runs in one fresh process, about 15 s.
def test_a_failure_in_any_thread_or_a_stalled_wait_ends_the_run_with_its_traceback(tmp_path):
    """A stalled wait times out naming what it waited for; a failure in an actor thread, in an environment inside
    one, or in the learner thread ends the run with exit 1 and that thread's traceback, and the logs are flushed.

    The runs share one interpreter (`tests/programs/faulty_run.py`): the first three are reported as the command
    line would report them, and the last, the environment's failure, ends the process itself, which could not exit
    if a thread of an earlier run were left behind. The subprocess timeout is the hang detector.
    """
    cases = [[*STALL, str(tmp_path / "stall"), STALL_ARGS]]
    for name, (_, fault, args) in FAILURES.items():
        cases.append([*fault, "raise", str(tmp_path / name), args])
    result = run_module("faulty_run", json.dumps(cases))
    stall, actor, learner = (json.loads(line) for line in result.stdout.splitlines()[-3:])
    assert stall["code"] == 1, stall["stderr"][-2000:]
    assert "TimeoutError: waited more than 1 s for a rollout from actor thread 0" in stall["stderr"]
    environment = {"code": result.returncode, "stderr": result.stderr}
    for name, outcome in zip(FAILURES, (actor, learner, environment), strict=True):
        thread, (_, attribute, _), _ = FAILURES[name]
        assert outcome["code"] == 1, outcome["stderr"][-2000:]
        assert f"injected failure in {attribute}" in outcome["stderr"]
        assert f"Sebulba thread '{thread}" in outcome["stderr"] and "Traceback" in outcome["stderr"]
        assert (tmp_path / name / "metrics.jsonl").exists()  # Logs were flushed and closed.


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.slow  # A Sebulba run in a fresh process, stopped by the signal: about 10 s each.
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
