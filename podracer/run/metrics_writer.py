"""Where log records go: `metrics.jsonl`, TensorBoard event files, and the resolved config.

Only process 0 of a job writes; without a workdir nothing is written. A
population's record (`podracer.config.population`) holds one record per member under
`members`; `metrics.jsonl` gets each member's as a line of its own, carrying
its `member` index, before the population's line, and `read_records` puts
them back under it. TensorBoard, and any tracker through `scalars`, shows a member's
scalars as `member_I/NAME`.
"""

import contextlib
import functools
import json
import math
import os
import time

from ml_collections import ConfigDict
from tensorboardX.event_file_writer import EventsWriter
from tensorboardX.proto.event_pb2 import Event, SessionLog
from tensorboardX.proto.summary_pb2 import Summary
from tensorboardX.summary import scalar

from podracer.devices.distributed import is_chief
from podracer.run import disk_full
from podracer.run.checkpoints import FOLDER, newest_saved
from podracer.run.whole_files import write_text

MEMBERS = "members"  # The field of a population's record that holds its members' records.
PARENT = "parent"  # A PBT member record's field: whose learner state and hyperparameters it takes at that record.
FLUSH_SECONDS = 120.0  # How long TensorBoard's events may wait in memory (tensorboardX's default).


class MetricsWriter:
    def __init__(self, workdir: str | None, config: ConfigDict, resume_step: int | None = None):
        """Creates `workdir` and writes the resolved config there as `config.json`.

        With `resume_step` (a run resumed from the checkpoint at that step), the
        records up to it are kept in `metrics.jsonl` and new ones appended; the
        later ones, written after that checkpoint, are dropped, and TensorBoard
        is told to discard its events after that step too.
        """
        self._jsonl = None
        self._tensorboard = None
        self.kept: list[dict] = []  # The records of the run before it resumed, as they were logged.
        self._reported = contextlib.nullcontext
        if workdir and is_chief():
            checkpoints = os.path.join(workdir, FOLDER)
            self._reported = functools.partial(
                disk_full.reported, "writing the metrics", workdir, lambda: newest_saved(checkpoints)
            )
            with self._reported():
                self._open(workdir, config, resume_step)

    def _open(self, workdir: str, config: ConfigDict, resume_step: int | None) -> None:
        """Writes `config.json`, keeps the records up to `resume_step` and opens the files records go to."""
        os.makedirs(workdir, exist_ok=True)
        write_text(os.path.join(workdir, "config.json"), config.to_json(indent=2))
        path = os.path.join(workdir, "metrics.jsonl")
        if resume_step is not None:
            self.kept = _records_up_to(path, resume_step)
            write_text(path, "".join(_json_lines(record) for record in self.kept))
        # A fresh run replaces an earlier run's records; a resumed one appends to those it kept.
        self._jsonl = open(path, "w" if resume_step is None else "a")  # noqa: SIM115 -- closed by close().
        self._tensorboard = EventFile(workdir, purge_step=None if resume_step is None else resume_step + 1)

    def write(self, record: dict) -> None:
        """Logs one record; `record["step"]` is the environment step count so far. Raises `DiskFull` on a full disk."""
        with self._reported():
            self._write(record)

    def _write(self, record: dict) -> None:
        if self._jsonl:
            self._jsonl.write(_json_lines(record))
            self._jsonl.flush()
        if self._tensorboard:
            self._tensorboard.write(record["step"], scalars(record))

    def close(self) -> None:
        """Closes the files; raises `DiskFull` if what was left to write does not fit."""
        with self._reported():
            try:
                if self._jsonl:
                    self._jsonl.close()  # Closed even if its last flush fails.
            finally:
                if self._tensorboard:
                    self._tensorboard.close()


class EventFile:
    """A TensorBoard event file in `workdir`, written on the thread that logs.

    tensorboardX's `SummaryWriter` writes from a thread of its own: on a full
    disk that thread dies unseen, and the run then blocks once its queue is
    full. Here a failed write raises where the record is logged. Events are
    flushed every `FLUSH_SECONDS` and at `close`.
    """

    def __init__(self, workdir: str, purge_step: int | None = None):
        """With `purge_step`, TensorBoard discards the events of earlier runs from that step on (a resumed run's)."""
        self._writer = EventsWriter(os.path.join(workdir, "events"))
        if purge_step is not None:
            self._writer.write_event(Event(step=purge_step, session_log=SessionLog(status=SessionLog.START)))
        self._flushed = time.monotonic()

    def write(self, step: int, scalars: dict[str, float]) -> None:
        """One event of `scalars` (name: value) at `step`."""
        values = [value for name, number in scalars.items() for value in scalar(name, number).value]
        self._writer.write_event(Event(wall_time=time.time(), step=step, summary=Summary(value=values)))
        if time.monotonic() - self._flushed > FLUSH_SECONDS:
            self._writer.flush()
            self._flushed = time.monotonic()

    def close(self) -> None:
        self._writer.close()


def scalars(record: dict) -> dict[str, int | float]:
    """A record's finite numbers by name, as trackers chart them: a population member's as `member_I/NAME`.

    `step` (the x axis) and a member's index are left out, and so are values
    that are not numbers or not finite (a window in which no episode ended).
    """
    values = {}
    for line in (*record.get(MEMBERS, ()), record):
        prefix = f"member_{line['member']}/" if "member" in line else ""
        for name, value in line.items():
            if name not in ("step", "member") and isinstance(value, (int, float)) and math.isfinite(value):
                values[prefix + name] = value
    return values


def read_records(path: str) -> list[dict]:
    """The records of a `metrics.jsonl`, NaNs (stored as null) restored; a last line cut short by a kill is left out.

    A population's member lines go back under `members` of the record that
    follows them. Raises `ValueError` naming the line for a broken line anywhere else.
    """
    with open(path) as f:
        lines = f.read().split("\n")
    records, members = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            if number == len(lines):  # No newline after it: the writer was stopped mid-line.
                break
            raise ValueError(f"{path}, line {number}: not a JSON record ({error})") from None
        record = {name: math.nan if value is None else value for name, value in record.items()}
        if "member" in record:
            members.append(record)
            continue
        if members:
            record[MEMBERS], members = members, []
        records.append(record)
    return records


def _records_up_to(path: str, step: int) -> list[dict]:
    """The records of `path` (if it exists) whose step is at most `step`."""
    return [record for record in read_records(path) if record["step"] <= step] if os.path.isfile(path) else []


def _json_lines(record: dict) -> str:
    """The lines of one record: its members' (a population's), then its own."""
    lines = [*record.get(MEMBERS, ()), {name: value for name, value in record.items() if name != MEMBERS}]
    return "".join(json.dumps({name: _json_value(value) for name, value in line.items()}) + "\n" for line in lines)


def _json_value(value):
    return None if isinstance(value, float) and not math.isfinite(value) else value
