"""One run per workdir: a live run's workdir is refused, a lock left by a dead run is taken over, the lock goes with the run.

A process's `flock` is held per open file, so this process holding a
workdir stands for a live run as well as another process would; a lock held
by another process that is then killed is the stale lock a preempted run
leaves.
"""

import errno
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

import podracer
from podracer import cli
from podracer.config.errors import ConfigError
from podracer.run.workdir_lock import LOCK_FILE, WorkdirInUse, hold
from tests.helpers import HANG_SECONDS, ROOT, load_config, start_pod

# A process that holds WORKDIR (argv[1]) through podracer's lock, says so, and waits to be killed.
HOLDER = "import sys, time; from podracer.run.workdir_lock import hold\nwith hold(sys.argv[1]):\n    print('held', flush=True); time.sleep(600)"


def contents(folder) -> dict:
    """Every file under `folder` with its bytes."""
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                found[os.path.relpath(os.path.join(root, name), folder)] = f.read()
    return found


def test_a_held_workdir_is_refused_naming_the_holder_and_left_as_it_was(tmp_path):
    with hold(str(tmp_path)):
        holder = json.loads((tmp_path / LOCK_FILE).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname()
        before = contents(tmp_path)
        with pytest.raises(WorkdirInUse) as refused:
            with hold(str(tmp_path)):
                pytest.fail("a second holder got in")
        assert contents(tmp_path) == before
    assert isinstance(refused.value, ConfigError) and refused.value.field == "workdir"
    message = str(refused.value)
    assert str(tmp_path) in message and f"pid {os.getpid()} on host {socket.gethostname()}" in message
    assert "another --workdir" in message
    assert not (tmp_path / LOCK_FILE).exists()  # Released: the next run finds nothing to take over.
    with hold(str(tmp_path)):
        pass


def test_a_run_that_ends_by_an_exception_releases_its_workdir_and_removes_the_folder_it_left_empty(tmp_path):
    workdir = tmp_path / "runs" / "catch"
    with pytest.raises(RuntimeError, match="failed as it built"):
        with hold(str(workdir)):
            assert (workdir / LOCK_FILE).exists()
            raise RuntimeError("failed as it built")
    assert os.listdir(tmp_path) == []
    with hold(str(workdir)):
        (workdir / "metrics.jsonl").write_text("")
    assert os.listdir(workdir) == ["metrics.jsonl"]


def test_the_lock_of_a_killed_holder_is_taken_over_naming_it(tmp_path, capfd):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(WorkdirInUse, match=f"pid {holder.pid} "):
            with hold(str(tmp_path)):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)  # As a preempted machine stops it: the file stays behind.
        holder.communicate(timeout=HANG_SECONDS)
    assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == holder.pid
    capfd.readouterr()
    with hold(str(tmp_path)):
        assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert (
        f"took over the lock of {tmp_path} from pid {holder.pid} on host {socket.gethostname()}"
        in capfd.readouterr().err
    )


def test_a_lock_file_nobody_locks_is_taken_over(tmp_path, capfd):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(ended.stdout)
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": dead, "host": "gone", "started": "2026-01-01 00:00:00 UTC"}))
    with hold(str(tmp_path)):
        pass
    assert f"from pid {dead} on host gone" in capfd.readouterr().err


def test_a_file_system_without_locks_is_said_and_the_run_goes_on(tmp_path, monkeypatch, capfd):
    def no_locks(descriptor, operation):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with hold(str(tmp_path)):
        pass
    assert "has no locks" in capfd.readouterr().err


@pytest.mark.parametrize("workdir", ["a file", "gs://bucket/run"])
def test_what_cannot_be_a_workdir_is_a_config_error_of_workdir(tmp_path, workdir):
    if workdir == "a file":
        workdir = str(tmp_path / "notes.txt")
        (tmp_path / "notes.txt").write_text("notes")
    with pytest.raises(ConfigError, match="config.workdir: ") as refused:
        with hold(workdir):
            pass
    assert workdir in str(refused.value)
    assert sorted(os.listdir(tmp_path)) == (["notes.txt"] if "notes" in workdir else [])


def test_a_lock_that_cannot_be_written_is_a_config_error_and_left_unlocked(tmp_path, monkeypatch):
    def no_space(descriptor, data, offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patched:
        patched.setattr(os, "pwrite", no_space)
        with pytest.raises(ConfigError, match=r"config.workdir: .* cannot be a workdir \(No space left on device\)"):
            with hold(str(tmp_path / "run")):
                pass
    assert os.listdir(tmp_path) == []
    with hold(str(tmp_path / "run")):
        pass


def test_train_refuses_a_held_workdir_before_building(tmp_path):
    config = load_config("anakin_catch", num_envs=8, total_steps=8 * 16)
    with hold(str(tmp_path)):
        before = contents(tmp_path)
        with pytest.raises(WorkdirInUse):
            podracer.train(config, workdir=str(tmp_path))
        assert contents(tmp_path) == before


def test_a_second_run_on_a_live_runs_workdir_exits_2_and_the_first_finishes_with_its_own_records(tmp_path, capsys):
    """The first run trains in this process; at its first record, `podracer train` is run on its workdir.

    The second run is the command line's, called in this process: the lock
    is per open file, so it conflicts here as in a process of its own (the
    test above takes a lock from another process).
    """
    fields = {"num_envs": 16, "updates_per_dispatch": 2, "total_steps": 16 * 16 * 2 * 3}
    config = load_config("anakin_catch", fields)
    second = []

    def start_a_second_run(event) -> None:
        if not second:
            command = ["podracer", "train", "--config", os.path.join(ROOT, "configs", "anakin_catch.py")]
            with pytest.raises(SystemExit) as exit_status:
                cli.main([*command, "--workdir", str(tmp_path), "--config.seed=7", "--noprogress"])
            second.append((exit_status.value.code, capsys.readouterr().err))

    first = podracer.train(config, workdir=str(tmp_path), callbacks=[start_a_second_run])
    [(status, stderr)] = second
    assert status == 2
    assert f"is in use by another run (pid {os.getpid()} on host {socket.gethostname()}" in stderr
    assert "Traceback" not in stderr
    assert [record["step"] for record in first.history] == [512, 1024, 1536]
    with open(tmp_path / "metrics.jsonl") as f:
        assert [json.loads(line)["step"] for line in f] == [512, 1024, 1536]
    assert json.loads((tmp_path / "config.json").read_text())["seed"] == config.seed != 7
    assert not (tmp_path / LOCK_FILE).exists()


@pytest.mark.slow  # A pod of two fresh processes (4 s on an idle 2-core machine, more under the suite).
def test_in_a_pod_process_0_holds_the_workdir_and_every_process_stops_when_it_cannot(tmp_path):
    with hold(str(tmp_path)):
        pod = start_pod("train_in_pod", 2, 2, args=("anakin_catch", "{}", str(tmp_path)))
        outputs = [process.communicate(timeout=HANG_SECONDS) for process in pod]
    assert [process.returncode for process in pod] == [1, 1]  # The program lets the error through.
    assert f"WorkdirInUse: config.workdir: {tmp_path} is in use by another run (pid {os.getpid()}" in outputs[0][1]
    assert "ConfigError: config.workdir: process 0 could not take the workdir" in outputs[1][1]
    assert os.listdir(tmp_path) == []
