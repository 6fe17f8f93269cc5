"""A full disk said plainly: a write that fails with ENOSPC ends the run in a few lines, and the run resumes from there.

The full disk is simulated by the lowest write each path makes in Python
failing with ENOSPC after writing part of its data: orbax's write of a
checkpoint state's metadata (its arrays are already in the checkpoint's
temporary folder by then), and a write to `metrics.jsonl`. The same command run again
must then resume from the last good checkpoint and end bitwise equal to a run
that never failed.
"""

import errno
import logging
import os
import sys

import jax
import numpy as np
import pytest
from etils import epath

import podracer
from podracer import cli
from podracer.run import disk_full, metrics_writer
from podracer.run.disk_full import DiskFull
from tests.helpers import load_config

STEPS_PER_UPDATE = 16 * 16
TIMINGS = ("steps_per_second", "compile_seconds", "wall_seconds")


def no_space(path) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


def small_catch():
    """3 dispatches of 2 updates, a checkpoint after each: at updates 2, 4 and 6."""
    fields = {"num_envs": 16, "updates_per_dispatch": 2, "total_steps": STEPS_PER_UPDATE * 6}
    return load_config("anakin_catch", {**fields, "checkpoint.every_updates": 2, "checkpoint.every_minutes": 0})


@pytest.fixture(scope="module")
def uninterrupted():
    return podracer.train(small_catch())


def fill_at_checkpoint(monkeypatch, update: int) -> None:
    """Orbax's write of checkpoint `update`'s state metadata (after its arrays) writes half of it, then finds the disk full."""
    write_text = epath.gpath.PosixGPath.write_text

    def filling(self, data, *args, **kwargs):
        if self.name == "_METADATA" and self.parent.parent.name.startswith(f"{update}.orbax-checkpoint-tmp"):
            with open(self, "w") as f:
                f.write(data[: len(data) // 2])
            raise no_space(self)
        return write_text(self, data, *args, **kwargs)

    monkeypatch.setattr(epath.gpath.PosixGPath, "write_text", filling)


def fill_at_record(monkeypatch, record: int) -> None:
    """`metrics.jsonl`'s `record`-th write writes half its line, then finds the disk full."""
    writes = 0

    class Filling:
        def __init__(self, file):
            self._file = file

        def write(self, text):
            nonlocal writes
            writes += 1
            if writes == record:
                self._file.write(text[: len(text) // 2])
                self._file.flush()
                raise no_space(self._file.name)
            return self._file.write(text)

        def __getattr__(self, name):
            return getattr(self._file, name)

    def opening(path, mode="r", *args, **kwargs):
        file = open(path, mode, *args, **kwargs)  # noqa: SIM115 -- closed by the writer.
        return Filling(file) if os.path.basename(path) == "metrics.jsonl" else file

    monkeypatch.setattr(metrics_writer, "open", opening, raising=False)


@pytest.mark.slow  # Three Catch runs to their end (one uninterrupted, two cut short and resumed): about 15 s.
@pytest.mark.parametrize(
    ("fill", "at", "what", "last_good"),
    [
        (fill_at_checkpoint, 6, "writing checkpoint 6 to {workdir}/checkpoints failed", 4),
        (fill_at_record, 2, "writing the metrics to {workdir} failed", 2),
    ],
)
def test_a_full_disk_is_said_in_a_few_lines_and_the_same_run_resumes_from_the_last_good_checkpoint(
    tmp_path, monkeypatch, capfd, caplog, uninterrupted, fill, at, what, last_good
):
    workdir = str(tmp_path)
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)  # Python's own, which prints; not pytest's.
    with monkeypatch.context() as patched:
        fill(patched, at)
        with pytest.raises(DiskFull) as full:
            podracer.train(small_catch(), workdir=workdir)
    message = str(full.value)
    step = last_good * STEPS_PER_UPDATE
    assert message.splitlines() == [
        f"the disk is full (No space left on device): {what.format(workdir=workdir)}.",
        f"The checkpoints are intact: the last good one is {workdir}/checkpoints/{last_good} (step {step:,}).",
        f"To resume, free space on that disk and run the same command again: it resumes from step {step:,}.",
    ]
    assert "Traceback" not in capfd.readouterr().err
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []

    resumed = podracer.train(small_catch(), workdir=workdir)  # Space freed: the same run again.
    assert f"resuming from {workdir}/checkpoints/{last_good}: step {step:,}" in capfd.readouterr().err
    for leaf, expected in zip(
        jax.tree.leaves(resumed.learner_state), jax.tree.leaves(uninterrupted.learner_state), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(leaf), np.asarray(expected))
    logged = metrics_writer.read_records(os.path.join(workdir, "metrics.jsonl"))
    assert [{k: v for k, v in r.items() if k not in TIMINGS} for r in logged] == [
        {k: v for k, v in r.items() if k not in TIMINGS} for r in uninterrupted.history
    ]
    assert sorted(os.listdir(tmp_path / "checkpoints")) == ["2", "4", "6"]


def test_no_checkpoint_yet_says_the_run_starts_afresh(tmp_path):
    with pytest.raises(DiskFull, match="No checkpoint was written before it; once space is freed, the same command"):
        with disk_full.reported("writing the metrics", str(tmp_path), lambda: None):
            raise no_space(tmp_path / "metrics.jsonl")


def test_a_full_disk_is_found_however_deep_it_was_raised():
    quota = OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))
    try:
        try:
            raise quota
        except OSError as error:
            raise RuntimeError("saving failed") from error
    except RuntimeError as wrapped:
        assert disk_full.full_reason(wrapped) == os.strerror(errno.EDQUOT)
    in_group = ExceptionGroup(
        "saves", [ValueError("other"), ValueError("write failed [OS error: No space left on device]")]
    )
    assert disk_full.full_reason(in_group) == "No space left on device"
    assert disk_full.full_reason(OSError(errno.EACCES, "Permission denied")) is None


def test_a_full_disk_met_while_an_earlier_one_is_raised_reports_the_earlier(tmp_path):
    def close_files():
        with disk_full.reported("writing the metrics", str(tmp_path), lambda: None):
            raise no_space(tmp_path / "events")

    with pytest.raises(DiskFull, match="writing checkpoint 6"):
        try:
            with disk_full.reported("writing checkpoint 6", str(tmp_path / "checkpoints"), lambda: None):
                raise no_space(tmp_path / "checkpoints")
        finally:
            close_files()
    with pytest.raises(ValueError, match="not a full disk"):
        with disk_full.reported("writing the metrics", str(tmp_path), lambda: None):
            raise ValueError("not a full disk")


def test_podracer_train_exits_1_with_only_the_short_message(tmp_path, monkeypatch, capsys):
    full = DiskFull("writing checkpoint 6", str(tmp_path), "No space left on device", (str(tmp_path / "4"), 4096))

    def train(*args, **kwargs):
        raise full

    monkeypatch.setattr("podracer.experiment.train.train", train)
    assert cli.run(["train", "--config", "configs/anakin_catch.py", "--workdir", str(tmp_path / "run")]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == f"podracer train: error: {full}".splitlines() and "step 4,096" in lines[-1]
