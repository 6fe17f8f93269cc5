"""TensorBoard's events as `MetricsWriter` writes them, read back with a reader of the TFRecord format written here."""

import errno
import glob
import os
import struct

import pytest
from tensorboardX.event_file_writer import EventsWriter
from tensorboardX.proto.event_pb2 import Event, SessionLog

from podracer.run.disk_full import DiskFull
from podracer.run.metrics_writer import MetricsWriter
from tests.helpers import load_config


def events(workdir) -> list[Event]:
    """Every event of every event file in `workdir`, file by file in the order they were created.

    A TFRecord is the data's length (8 bytes, little-endian), a checksum of
    the length (4), the data, and a checksum of the data (4).
    """
    found = []
    for path in sorted(glob.glob(os.path.join(workdir, "events.out.tfevents.*")), key=os.path.getmtime):
        with open(path, "rb") as f:
            data = f.read()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            found.append(Event.FromString(data[offset + 12 : offset + 12 + length]))
            offset += 12 + length + 4
    return found


def scalars(workdir) -> list[tuple[int, str, float]]:
    return [(event.step, value.tag, value.simple_value) for event in events(workdir) for value in event.summary.value]


def test_records_go_to_tensorboard_with_members_prefixed_and_non_finite_values_left_out(tmp_path):
    writer = MetricsWriter(str(tmp_path), load_config("anakin_catch"))
    member = {"step": 100, "member": 1, "loss": 0.25}
    writer.write({"step": 100, "loss": 0.5, "episodes": 3, "mean_episode_return": float("nan"), "members": [member]})
    writer.write({"step": 200, "loss": 0.125})
    writer.close()
    assert scalars(tmp_path) == [
        (100, "member_1/loss", 0.25),
        (100, "loss", 0.5),
        (100, "episodes", 3.0),
        (200, "loss", 0.125),
    ]


def test_a_resumed_run_tells_tensorboard_to_discard_the_events_after_its_checkpoint(tmp_path):
    config = load_config("anakin_catch")
    writer = MetricsWriter(str(tmp_path), config)
    for step in (100, 200, 300):
        writer.write({"step": step, "loss": step / 1000})
    writer.close()
    resumed = MetricsWriter(str(tmp_path), config, resume_step=200)
    resumed.write({"step": 300, "loss": 0.5})
    resumed.close()
    starts = [event.step for event in events(tmp_path) if event.session_log.status == SessionLog.START]
    assert starts == [201]  # TensorBoard purges the events at and after a START's step.
    assert scalars(tmp_path)[-1] == (300, "loss", 0.5)


def test_a_full_disk_under_tensorboard_is_a_disk_full_error(tmp_path, monkeypatch):
    writer = MetricsWriter(str(tmp_path), load_config("anakin_catch"))

    def no_space(self, event):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(EventsWriter, "write_event", no_space)
    with pytest.raises(DiskFull, match=f"writing the metrics to {tmp_path} failed"):
        writer.write({"step": 100, "loss": 0.5})
    writer.close()
