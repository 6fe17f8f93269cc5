"""Anakin resumes exactly: a run killed with SIGKILL at a random point, then resumed, equals one never stopped.

Equal means the whole final learner state bitwise, and every metrics.jsonl
record but its timings. The runs are subprocesses on forced CPU devices; a
pause at each log record (timing only) leaves room to kill them mid-run, and a
run to be killed waits at a later record until it is (it never ends first,
however busy the host). The kill lands anywhere, inside a checkpoint's save too
(`tests/programs/dies_in_save.py`), and in a pod of processes every process is
killed.
"""

import json
import os
import random
import signal
import subprocess
import time

import pytest

import podracer
from podracer.run.checkpoints import Checkpointer
from tests.helpers import (
    HANG_SECONDS,
    finish,
    last_json_line,
    load_config,
    run_module,
    start_cli,
    start_pod,
    start_program,
    wait_until,
)

CONFIG = "anakin_catch"
# 8 dispatches of 4 updates, with a checkpoint after each (and none by time, however slow the run).
OVERRIDES = {"num_envs": 32, "updates_per_dispatch": 4, "total_steps": 32 * 16 * 4 * 8, "checkpoint.every_updates": 4}
OVERRIDES["checkpoint.every_minutes"] = 0
# One small layer, in every run of the file: a resume is exact whatever the network's size, and a smaller program
# traces and compiles faster in each of the file's many processes.
OVERRIDES["network.hidden_sizes"] = (16,)
# A recurrent run of several agents: two agents of a cooperative game (tests/programs/coordination_game.py), MAPPO
# with a network per agent and an LSTM per head. The agents' stacked learner states and each agent's LSTM states
# (c, h) in every environment are part of what a checkpoint must bring back.
RECURRENT = {**OVERRIDES, "network.core": "lstm", "network.core_size": 16, "unroll_length": 16}
RECURRENT.update({"agent.name": "mappo", "agent.critic": "centralised", "agent.share_parameters": False})
SEVERAL_AGENTS = "tests/programs/coordination_game.py"
TIMING_FIELDS = ("steps_per_second", "compile_seconds", "wall_seconds")


def records(workdir, timings: bool = False) -> list[dict]:
    with open(os.path.join(workdir, "metrics.jsonl")) as f:
        return [{k: v for k, v in json.loads(line).items() if timings or k not in TIMING_FIELDS} for line in f]


def logged(workdir, lines: int) -> bool:
    """Whether WORKDIR/metrics.jsonl holds `lines` whole records or more."""
    path = os.path.join(workdir, "metrics.jsonl")
    return os.path.exists(path) and open(path).read().count("\n") >= lines


def run(
    workdir, num_devices: int, pause: float = 0.0, overrides: dict = OVERRIDES, config: str = CONFIG
) -> subprocess.CompletedProcess:
    return run_module("resumable_run", config, json.dumps(overrides), str(workdir), str(pause), num_devices=num_devices)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """`uninterrupted(num_devices, overrides)`: the workdir and result of a run never stopped, run once per module,
    device count and overrides."""
    runs = {}

    def get(
        num_devices: int, overrides: dict = OVERRIDES, config: str = CONFIG
    ) -> tuple[str, subprocess.CompletedProcess]:
        name = (num_devices, json.dumps(overrides), config)
        if name not in runs:
            workdir = tmp_path_factory.mktemp(f"whole_on_{num_devices}")
            result = run(workdir, num_devices, overrides=overrides, config=config)
            assert result.returncode == 0, result.stderr
            runs[name] = workdir, result
        return runs[name]

    return get


def kill_when_logged(workdir, num_devices: int, lines: int, overrides: dict = OVERRIDES, config: str = CONFIG) -> None:
    """Starts the run and SIGKILLs it once its metrics.jsonl has `lines` records (or more: the kill races on)."""
    args = (config, json.dumps(overrides), str(workdir), "0.3", str(lines + 1))  # Held at the record after.
    process = start_program("resumable_run", *args, num_devices=num_devices)
    wait_until(lambda: logged(workdir, lines), f"{lines} log records", [process])
    time.sleep(random.uniform(0.0, 0.3))  # Anywhere in the pause, or the next dispatch, or a save (or the hold).
    assert process.poll() is None, process.communicate()[1][-3000:]
    process.send_signal(signal.SIGKILL)
    process.wait()


@pytest.mark.slow  # About 14 s: three runs in fresh processes.
def test_killed_and_resumed_run_on_two_devices_equals_an_uninterrupted_one(tmp_path, uninterrupted):
    """Two devices and recurrent agents, two of them in each environment: their LSTM states must come back too.

    One device is killed (twice, inside saves) and resumes bitwise in the test below; two feed-forward devices
    in the pod's test. A separate 1-device kill at a random point re-ran the same resume path: it was cut.
    """
    num_devices, overrides, config = 2, RECURRENT, SEVERAL_AGENTS
    whole_dir, whole = uninterrupted(num_devices, overrides, config)

    lines = random.Random(num_devices).randint(2, 6)
    kill_when_logged(tmp_path / "killed", num_devices, lines, overrides, config)
    resumed = run(tmp_path / "killed", num_devices, overrides=overrides, config=config)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from" in resumed.stderr
    compiled_at = [r["step"] for r in records(tmp_path / "killed", timings=True) if "compile_seconds" in r]
    assert len(compiled_at) == 2 and compiled_at[1] > compiled_at[0]  # It went on from a checkpoint mid-run.

    assert last_json_line(resumed.stdout) == last_json_line(whole.stdout)  # Steps and the learner state's digest.
    assert records(tmp_path / "killed") == records(whole_dir)


def checkpoint_folders(workdir) -> list[str]:
    """What `WORKDIR/checkpoints` holds, in update order: finished checkpoints and orbax's temporary folders."""
    return sorted(os.listdir(os.path.join(workdir, "checkpoints")), key=lambda name: int(name.split(".")[0]))


def die_in_save(workdir, update: int, where: str) -> subprocess.CompletedProcess:
    """The run of `run`, SIGKILLed while it writes the checkpoint of `update` (see tests/programs/dies_in_save.py)."""
    args = (str(update), where, "resumable_run", CONFIG, json.dumps(OVERRIDES), str(workdir), "0")
    return run_module("dies_in_save", *args, num_devices=1)


@pytest.mark.slow  # 15-20 s: four runs in fresh processes (the uninterrupted one shared with the test above).
def test_a_kill_during_a_save_leaves_the_previous_checkpoint_to_resume_from(tmp_path, uninterrupted):
    whole_dir, whole = uninterrupted(1)
    workdir, folder = tmp_path / "killed", str(tmp_path / "killed" / "checkpoints")

    # Killed with every item of checkpoint 12 written, its commit-success file too, before orbax's last rename.
    killed = die_in_save(workdir, 12, "step")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert "SIGKILL before renaming" in killed.stderr
    assert checkpoint_folders(workdir) == ["4", "8", "12.orbax-checkpoint-tmp"]
    assert "commit_success.txt" in os.listdir(os.path.join(folder, "12.orbax-checkpoint-tmp"))
    checkpointer = Checkpointer(str(workdir), load_config(CONFIG, OVERRIDES))
    assert checkpointer.steps == [8, 4]  # 12 is not a checkpoint.
    checkpointer.close()

    # Resumed from 8, and killed in the save of 20, its `state` arrays written but not yet renamed into place.
    killed = die_in_save(workdir, 20, "state")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert f"resuming from {folder}/8:" in killed.stderr and "cannot be read" not in killed.stderr
    assert checkpoint_folders(workdir) == ["8", "12", "16", "20.orbax-checkpoint-tmp"]  # 12 written again.
    assert os.listdir(os.path.join(folder, "20.orbax-checkpoint-tmp", "state.orbax-checkpoint-tmp"))  # Mid-save.

    resumed = run(workdir, 1)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {folder}/16:" in resumed.stderr and "cannot be read" not in resumed.stderr
    assert checkpoint_folders(workdir) == ["24", "28", "32"]
    compiled_at = [r["step"] for r in records(workdir, timings=True) if "compile_seconds" in r]
    assert compiled_at == [512 * 4, 512 * (8 + 4), 512 * (16 + 4)]  # Started from 0, 8 and 16 updates (512 steps each).
    assert last_json_line(resumed.stdout) == last_json_line(whole.stdout)  # Steps and the learner state's digest.
    assert records(workdir) == records(whole_dir)


# The pod's own run: 4 dispatches of 4 updates, a checkpoint after each; it compiles a program of its own (4 devices
# in 2 processes) whatever its length.
POD = {**OVERRIDES, "total_steps": 32 * 16 * 4 * 4}


def run_pod(*workdirs, pause_and_hold: tuple[str, ...] = ()) -> list[subprocess.Popen]:
    """`run` as a pod: 2 processes x 2 forced CPU devices joined by jax.distributed (tests/devices/test_distributed.py),
    training into `workdirs` in turn.

    `pause_and_hold`: train_in_pod's PAUSE_SECONDS and HOLD_FROM, if given.
    """
    args = (CONFIG, json.dumps(POD), os.pathsep.join(map(str, workdirs)), *pause_and_hold)
    return start_pod("train_in_pod", 2, 2, args=args)


def results(pod: list[subprocess.Popen]) -> list[tuple[list[dict], str]]:
    """Every process's printed results (one a workdir, among gloo's lines) and stderr, once each has exited with 0."""
    outputs = finish(pod)
    return [([json.loads(line) for line in out.splitlines() if line.startswith("{")], err) for out, err in outputs]


@pytest.mark.slow  # About 20 s: a pod of two processes, twice (the second resumes, then runs the uninterrupted one).
def test_a_pod_killed_and_relaunched_equals_an_uninterrupted_one(tmp_path):
    """The relaunched pod resumes the killed run, then runs the uninterrupted one in the same processes, which saves
    a pod's start; the resume is the first run of its processes, as after a crash."""
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    # Paused at each record, and held at the fourth, the last (before its checkpoint): it cannot end before the kill.
    pod, folder = run_pod(killed, pause_and_hold=("0.2", "4")), killed / "checkpoints"

    def two_checkpoints() -> bool:  # Beyond the first.
        return folder.is_dir() and sum(name.isdigit() for name in os.listdir(folder)) >= 2

    wait_until(two_checkpoints, "a second checkpoint", pod)
    time.sleep(random.uniform(0.0, 1.0))  # Anywhere in a pause, a dispatch or a save (or the hold).
    assert all(process.poll() is None for process in pod), [p.communicate()[1][-2000:] for p in pod]
    for process in pod:
        process.send_signal(signal.SIGKILL)
    for process in pod:
        process.wait()

    relaunched = results(run_pod(killed, whole))
    resumed, uninterrupted = ([lines[i] for lines, _ in relaunched] for i in (0, 1))
    # The uninterrupted pod: Anakin replicated over 2 processes x 2 devices, the same parameters in each process,
    # and one record per log step for the whole job, from process 0 (tests/devices/test_distributed.py: Sebulba's).
    assert sorted(result["process"] for result in uninterrupted) == [0, 1]
    assert all(result["devices"] == 4 and result["steps"] == POD["total_steps"] for result in uninterrupted)
    assert uninterrupted[0]["digest"] == uninterrupted[1]["digest"]
    steps = [record["step"] for record in records(whole)]
    assert steps == sorted(set(steps)) and steps[-1] == POD["total_steps"]

    stderr = relaunched[0][1]  # Process 0 says it resumes, once: the uninterrupted run started afresh.
    assert f"resuming from {folder}/" in stderr and stderr.count("resuming from") == 1
    compiled_at = [r["step"] for r in records(killed, timings=True) if "compile_seconds" in r]
    assert len(compiled_at) == 2 and compiled_at[1] > 512 * 8  # It went on from checkpoint 8 or a later one.

    assert resumed == uninterrupted  # Each process's parameters.
    assert records(killed) == records(whole)
    assert not [name for name in os.listdir(folder) if not name.isdigit()]  # No temporary folder left behind.


@pytest.mark.slow  # A run in a fresh process, about 13 s.
@pytest.mark.parametrize("signal_number, exit_code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_finishes_the_dispatch_writes_a_checkpoint_and_exits(tmp_path, signal_number, exit_code):
    workdir = tmp_path / "run"
    process = start_cli(  # The batch of the runs above, so its program is compiled once for the file.
        *("train", "--config", f"configs/{CONFIG}.py", "--workdir", str(workdir), "--noprogress"),
        *("--config.total_steps=100_000_000", "--config.checkpoint.every_minutes=0"),
        *(
            f"--config.num_envs={OVERRIDES['num_envs']}",
            f"--config.updates_per_dispatch={OVERRIDES['updates_per_dispatch']}",
            "--config.network.hidden_sizes=(16,)",
        ),
        f"--config.max_dispatch_seconds={HANG_SECONDS}",
    )
    wait_until(lambda: logged(workdir, 2), "2 log records", [process])
    process.send_signal(signal_number)
    _, stderr = process.communicate(timeout=HANG_SECONDS)  # Not the 100M steps: the stop's checkpoint is the only one.
    assert process.returncode == exit_code, stderr
    assert f"stopped by {signal.Signals(signal_number).name}" in stderr and "checkpoint written" in stderr
    last = records(workdir)[-1]
    config = load_config(CONFIG, {"num_envs": OVERRIDES["num_envs"]})
    update = last["step"] // (config.num_envs * config.unroll_length)
    assert sorted(os.listdir(workdir / "checkpoints")) == [str(update)]  # Only time and the end save: the stop's.


# In this process, on its two devices: what a resume accepts and refuses, and a checkpoint that cannot be read.


SMALL = {"num_envs": 16, "updates_per_dispatch": 2, "total_steps": 16 * 16 * 2 * 3, "checkpoint.every_updates": 2}
SMALL["checkpoint.every_minutes"] = 0
SMALL["network.hidden_sizes"] = OVERRIDES["network.hidden_sizes"]


def small_catch(**fields):
    return load_config(CONFIG, {**SMALL, **fields})


@pytest.mark.slow  # Runs in fresh processes.
def test_a_resume_may_run_longer_or_on_other_devices_but_not_change_the_batch(tmp_path):
    first = podracer.train(small_catch(), workdir=str(tmp_path))
    assert sorted(os.listdir(tmp_path / "checkpoints")) == ["2", "4", "6"]
    with pytest.raises(podracer.ConfigError, match=r"config.num_envs: .*num_envs \(checkpoint 16, now 32\)"):
        podracer.train(small_catch(num_envs=32), workdir=str(tmp_path))
    longer = podracer.train(small_catch(total_steps=16 * 16 * 2 * 5), workdir=str(tmp_path))
    assert [r["step"] for r in longer.history] == [512 * i for i in range(1, 6)]
    assert longer.history[:3] == first.history  # Kept as logged, timings included.
    assert sorted(os.listdir(tmp_path / "checkpoints")) == ["10", "6", "8"]  # The newest 3.
    with open(tmp_path / "checkpoints" / "10" / "meta" / "metadata") as f:
        assert json.load(f)["devices"] == 2  # This process's.
    elsewhere = run(tmp_path, num_devices=1, overrides={**SMALL, "total_steps": 16 * 16 * 2 * 6})  # Another machine.
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert "step 2,560, written on 2 devices and continued on 1" in elsewhere.stderr


@pytest.mark.slow
def test_resume_never_starts_afresh_and_replaces_the_old_checkpoints_total_steps_cannot_change_under_annealing(
    tmp_path,
):
    """Both on one program: an annealed learning rate's schedule is fixed by total_steps."""
    annealed = {"optimizer.anneal_lr": True}
    podracer.train(small_catch(seed=1, **annealed), workdir=str(tmp_path))
    with pytest.raises(podracer.ConfigError, match="total_steps"):
        podracer.train(small_catch(seed=1, **annealed, total_steps=16 * 16 * 2 * 5), workdir=str(tmp_path))
    fresh = podracer.train(small_catch(seed=2, resume="never", **annealed), workdir=str(tmp_path))  # A new seed too.
    assert [r["step"] for r in fresh.history] == [512, 1024, 1536]
    assert "compile_seconds" in fresh.history[0]
    assert [r["step"] for r in records(tmp_path)] == [512, 1024, 1536]  # The first run's records replaced.
    with open(tmp_path / "checkpoints" / "6" / "meta" / "metadata") as f:
        assert json.load(f)["config"]["seed"] == 2


@pytest.mark.slow
def test_an_unreadable_checkpoint_is_reported_in_one_line_and_the_one_before_it_used(tmp_path):
    """The resume runs in a fresh process: orbax's own reports of the failed read show there (not after a save)."""
    podracer.train(small_catch(), workdir=str(tmp_path))
    newest = tmp_path / "checkpoints" / "6" / "state"
    for root, _, files in os.walk(newest):
        for name in files:
            if os.path.basename(root) == "d":  # The arrays' data; its metadata still reads.
                with open(os.path.join(root, name), "r+b") as f:
                    f.write(random.Random(name).randbytes(os.path.getsize(os.path.join(root, name))))
    again = run(tmp_path, num_devices=2, overrides=SMALL)
    assert again.returncode == 0, again.stderr
    assert again.stderr.count("cannot be read") == 1 and "checkpoints/6 cannot be read (DATA_LOSS" in again.stderr
    assert f"resuming from {tmp_path}/checkpoints/4" in again.stderr
    assert "Traceback" not in again.stderr  # Orbax's own reports of the failed read are held back.
    assert [r["step"] for r in records(tmp_path)] == [512, 1024, 1536]  # Step 1536 was learned again from update 4.
