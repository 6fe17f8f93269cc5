"""Weights & Biases: every record, the config and videos reach an offline wandb run; a resumed run continues it.

The offline run is read back from wandb's own transaction log (`run-ID.wandb`,
what `wandb sync` uploads), decoded here with wandb's protobuf `Record`: no
network is involved. One short population run and its resume are shared by
the module's tests (wandb's service takes seconds to start).
"""

import contextlib
import json
import math
import pathlib
import signal
import struct
import sys

import pytest
from PIL import Image

import podracer
from podracer.experiment import train as train_module
from podracer.run import wandb_logger
from podracer.run.stopping import StoppedBySignal
from tests.helpers import load_config, wait_until

STEPS = 2 * 8_192  # Two log records of Catch (an update of 8,192 steps each), then two more on resuming.
VIDEO_STEP = 8_192  # The first record's step: a video logged by a callback there joins that record's row.

# wandb's transaction log is a LevelDB log: a 7-byte file header, then 32 KiB blocks of chunks, each after a
# 7-byte header (crc32, length, type); a record too long for its block continues in the next.
BLOCK, CHUNK_HEADER = 32_768, 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def transaction_log(path: pathlib.Path) -> list:
    """Every `Record` protobuf of a `.wandb` file, in order."""
    wandb_records = pytest.importorskip("wandb.proto.wandb_internal_pb2")  # Here: importing wandb takes seconds.
    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pending, offset = [], b"", CHUNK_HEADER
    while offset + CHUNK_HEADER <= len(data):
        left = BLOCK - offset % BLOCK
        if left < CHUNK_HEADER:  # A block's trailer, too short for a header: zeros.
            offset += left
            continue
        _, length, kind = struct.unpack("<IHB", data[offset : offset + CHUNK_HEADER])
        if offset + CHUNK_HEADER + length > len(data):  # A chunk still being written.
            break
        pending += data[offset + CHUNK_HEADER : offset + CHUNK_HEADER + length]
        offset += CHUNK_HEADER + length
        if kind in (FULL, LAST):
            records.append(wandb_records.Record.FromString(pending))
            pending = b""
    return records


def offline_runs(workdir: pathlib.Path) -> list[list]:
    """The transaction logs of a workdir's offline wandb runs, oldest first, each once wandb has written it whole.

    wandb's service writes a log in the background, and may still be writing its end when `finish` returns.
    """
    paths = sorted(workdir.glob("wandb/offline-run-*/run-*.wandb"))
    for path in paths:
        wait_until(lambda path=path: bool(of_type(transaction_log(path), "exit")), f"wandb to finish {path}")
    return [transaction_log(path) for path in paths]


def of_type(records: list, kind: str) -> list:
    return [getattr(record, kind) for record in records if record.WhichOneof("record_type") == kind]


def items(entries) -> dict:
    """wandb's `{key: JSON}` entries (history rows, config updates) as a dict; a key may come as `nested_key`."""
    return {entry.key or "/".join(entry.nested_key): json.loads(entry.value_json) for entry in entries}


def history(records: list) -> dict[int, dict]:
    """The logged rows by their step: `{_step: {key: value}}`."""
    rows = [items(row.item) for row in of_type(records, "history")]
    return {row["_step"]: row for row in rows}


def draw_gif(path: pathlib.Path) -> None:
    frames = [Image.new("RGB", (8, 8), (40 * i, 0, 0)) for i in range(3)]
    frames[0].save(path, save_all=True, append_images=frames[1:])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Catch logged offline, with a video at its first record, then resumed for two more records."""
    workdir = tmp_path_factory.mktemp("wandb") / "catch_run"
    video = workdir.parent / "episode.gif"
    draw_gif(video)
    fields = {"logger.wandb.project": "podracer-tests", "logger.wandb.mode": "offline", "logger.wandb.tags": ("a", "b")}

    def video_at_first_record(event: podracer.LogEvent) -> None:
        if event.record["step"] == VIDEO_STEP:
            wandb_logger.log_video(str(video), VIDEO_STEP)

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("WANDB_DIR", raising=False)
        config = load_config("anakin_catch", fields, total_steps=STEPS)
        first = podracer.train(config, workdir=str(workdir), callbacks=[video_at_first_record])
        config = load_config("anakin_catch", fields, total_steps=2 * STEPS)
        resumed = podracer.train(config, workdir=str(workdir))
    return workdir, config, first.history, resumed.history


def expected_row(record: dict) -> dict:
    """What wandb should hold for a record: its finite numbers but the step."""
    return {name: value for name, value in record.items() if name != "step" and math.isfinite(value)}


@pytest.mark.slow
def test_every_record_is_in_the_offline_run_at_its_step(runs):
    workdir, _, first, resumed = runs
    for records, log in zip((first, resumed[len(first) :]), offline_runs(workdir), strict=True):
        rows = history(log)
        assert sorted(rows) == [record["step"] for record in records]
        for record in records:
            row = rows[record["step"]]
            assert "loss" in row and "steps_per_second" in row
            assert {name: row[name] for name in expected_row(record)} == expected_row(record)
        assert [exit.exit_code for exit in of_type(log, "exit")] == [0]  # Finished, with success.


@pytest.mark.slow
def test_the_config_and_a_video_are_in_the_offline_run(runs):
    workdir, config, _, _ = runs
    log = offline_runs(workdir)[-1]
    run = of_type(log, "run")[0]
    logged = items(run.config.update)
    for update in of_type(log, "config"):
        logged.update(items(update.update))
    assert logged["total_steps"] == 2 * STEPS and logged["env"]["name"] == "catch"
    assert logged["network"]["hidden_sizes"] == [64, 64] and logged["logger"]["wandb"]["tags"] == ["a", "b"]
    assert (run.project, run.display_name, list(run.tags)) == ("podracer-tests", "catch_run", ["a", "b"])

    row = history(offline_runs(workdir)[0])[VIDEO_STEP]  # The video's fields are nested under its key.
    assert row["evaluation/video/_type"] == "video-file" and row["evaluation/video/path"].endswith(".gif")
    assert list(workdir.glob("wandb/offline-run-*/files/" + row["evaluation/video/path"]))
    assert "loss" in row  # In the same row as the record of its step.


@pytest.mark.slow
def test_a_resumed_run_continues_the_same_wandb_run(runs):
    workdir, _, _, _ = runs
    kept = (workdir / wandb_logger.ID_FILE).read_text().strip()
    assert [of_type(log, "run")[0].run_id for log in offline_runs(workdir)] == [kept, kept]


def test_without_wandb_a_project_is_a_config_error_before_anything_is_built(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` raises ImportError, as when it is not installed.
    monkeypatch.setitem(train_module._TRAIN, "anakin", lambda *args, **kwargs: pytest.fail("the run was built"))
    config = load_config("anakin_catch", {"logger.wandb.project": "podracer"})
    with pytest.raises(podracer.ConfigError, match=r"config\.logger\.wandb\.project: .*pip install -e '\.\[wandb\]'"):
        podracer.train(config, workdir=str(tmp_path / "run"))
    assert not (tmp_path / "run").exists()


def test_off_by_default_and_when_disabled(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # Neither imports wandb.
    assert wandb_logger.start(load_config("anakin_catch"), None) is None
    disabled = load_config("anakin_catch", {"logger.wandb.project": "p", "logger.wandb.mode": "disabled"})
    assert wandb_logger.start(disabled, None) is None
    wandb_logger.log_video("episode.mp4", 0)  # No run under way: nothing happens.


@pytest.mark.parametrize(
    ("field", "value"),
    [("logger.wandb.mode", "online!"), ("logger.wandb.tags", ("ok", "")), ("logger.wandb.tags", (1,))],
)
def test_bad_fields_are_config_errors(field, value):
    config = load_config("anakin_catch", {field: value})
    with pytest.raises(podracer.ConfigError, match=rf"config\.{field}: "):
        podracer.validate_config(config)


class FakeRun:
    """Records what a `WandbLogger` asks of its wandb run."""

    resumed = False

    def __init__(self, **init):
        self.init, self.logged, self.exit_code = init, [], None

    def log(self, data: dict, step: int) -> None:
        self.logged.append((step, data))

    def finish(self, exit_code: int) -> None:
        self.exit_code = exit_code


def test_the_run_id_is_kept_in_the_workdir_and_resumed_unless_resume_is_never(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setattr(wandb, "init", FakeRun)
    monkeypatch.delenv("WANDB_DIR", raising=False)
    workdir = str(tmp_path / "lr3e-3")
    config = load_config("anakin_catch", {"logger.wandb.project": "p", "logger.wandb.group": "g"})
    first, again = (wandb_logger.start(config, workdir).run.init for _ in range(2))
    assert first["id"] == again["id"] == (tmp_path / "lr3e-3" / wandb_logger.ID_FILE).read_text().strip()
    assert (again["resume"], again["name"], again["dir"], again["group"]) == ("allow", "lr3e-3", workdir, "g")
    assert (again["entity"], again["mode"]) == (None, None)  # wandb's own defaults.
    config = load_config("anakin_catch", {"logger.wandb.project": "p", "resume": "never"})
    fresh = wandb_logger.start(config, workdir).run.init
    assert (
        fresh["id"] != first["id"] and fresh["id"] == (tmp_path / "lr3e-3" / wandb_logger.ID_FILE).read_text().strip()
    )


def test_a_resumed_wandb_run_is_sent_only_the_steps_it_lacks(monkeypatch):
    class Resumed(FakeRun):
        resumed, step = True, 16_385  # wandb's next step: the run it resumes has records up to 16,384.

    monkeypatch.setattr(pytest.importorskip("wandb"), "init", Resumed)
    logger = wandb_logger.start(load_config("anakin_catch", {"logger.wandb.project": "p"}), None)
    for step in (8_192, 16_384, 24_576):  # A checkpoint at 8,192: the records from there on come again.
        logger(podracer.LogEvent({"step": step, "loss": 1.0}, None, 24_576))
    assert logger.run.logged == [(24_576, {"loss": 1.0})]


def test_a_populations_members_are_logged_as_member_i():
    run = FakeRun()
    members = [{"step": 8, "member": i, "loss": 0.5 + i, "mean_episode_return": float("nan")} for i in range(2)]
    record = {"step": 8, "members": members, "loss": 1.0, "best_member": 1, "note": "text"}
    wandb_logger.WandbLogger(run)(podracer.LogEvent(record, None, 16))
    assert run.logged == [(8, {"member_0/loss": 0.5, "member_1/loss": 1.5, "loss": 1.0, "best_member": 1})]


@pytest.mark.parametrize(
    ("error", "exit_code"), [(None, 0), (RuntimeError("boom"), 1), (StoppedBySignal(signal.SIGTERM, "stopped"), 143)]
)
def test_the_wandb_run_is_finished_however_the_run_ends(error, exit_code):
    run = FakeRun()
    with pytest.raises(type(error)) if error else contextlib.nullcontext():
        with wandb_logger.WandbLogger(run) as logger:
            logger(podracer.LogEvent({"step": 8, "loss": 0.5, "mean_episode_return": float("nan")}, None, 16))
            if error:
                raise error
    assert run.logged == [(8, {"loss": 0.5})] and run.exit_code == exit_code
    wandb_logger.log_video("episode.mp4", 16)  # The run has ended: nothing is logged.
    assert len(run.logged) == 1
