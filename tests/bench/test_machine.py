"""The machine columns: the CPU's model, and podracer's commit with its dirty mark."""

import os
import subprocess

from podracer.bench import machine


def test_cpu_model_is_the_first_model_name_in_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Test CPU @ 2.0GHz\n\nmodel name\t: Other\n")
    assert machine.cpu_model(str(cpuinfo)) == "Test CPU @ 2.0GHz"
    assert machine.cpu_model(str(tmp_path / "missing")) == (machine.platform.processor() or "unknown")


def test_commit_is_the_short_hash_marked_dirty_by_changed_tracked_files(tmp_path, monkeypatch):
    # Git's defaults, not the user's or the system's configuration (commit signing, hooks, a default branch...).
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # Nor a checkout above the temporary folder.
    assert machine.commit(str(tmp_path)) == "unknown"  # Not a git checkout.

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (tmp_path / "new.py").write_text("")  # Untracked files do not count.
    assert machine.commit(str(tmp_path)) == head
    (tmp_path / "a.py").write_text("x = 2\n")
    assert machine.commit(str(tmp_path)) == head + "-dirty"


def test_a_cpu_only_machine_has_no_accelerator_and_an_accelerator_is_counted():
    assert machine.describe(machine.Devices("cpu", "cpu", 2)).accelerator == "none"
    assert machine.describe(machine.Devices("gpu", "NVIDIA H100", 8)).accelerator == "8 x NVIDIA H100"
