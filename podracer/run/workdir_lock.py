"""One run per workdir: a run takes its workdir for itself with a lock file, `WORKDIR/.podracer.lock`.

Two runs writing one workdir interleave their records in `metrics.jsonl` and
break each other's checkpoints. So `hold` takes the workdir before anything
is built: it locks the lock file with `flock` and writes the holder (pid,
host, start time, as JSON) into it; a second run finds the lock taken and
raises `WorkdirInUse` (a `ConfigError` of `workdir`) naming the holder,
having written nothing. The operating system releases a `flock` when its
process ends however it ends, so a lock file left by a run that was killed
(`kill -9`, a preempted machine) is not locked: the next run takes it over,
says from which pid, and resumes. A run that ends (normally, by an exception,
or stopped by a signal) removes the lock file, and the workdir itself if it
created it and wrote nothing else there.

In a job of several processes, process 0 holds the lock; every process
learns whether it got it, so all of them stop when it did not. `flock` works
on local disks and on NFS (where the server keeps the locks); a file system
whose locks are local to each machine protects the workdir only from runs on
the same machine, and one without locks not at all (a run then says so and
goes on). An object store URL (`gs://...`) is not a workdir: podracer writes
its workdir through the file system.
"""

import contextlib
import datetime
import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Iterator

import jax
import numpy as np
from jax.experimental import multihost_utils

from podracer.config.errors import ConfigError
from podracer.devices.distributed import is_chief

LOCK_FILE = ".podracer.lock"
READ_ATTEMPTS = 20  # A holder writes its JSON right after taking the lock: reads wait for it this many times ...
READ_PAUSE_SECONDS = 0.05  # ... this long each.
NOT_LOCKED = -1  # The descriptor of a lock on a file system without locks.


class WorkdirInUse(ConfigError):
    """Another run that is still alive holds the workdir; `holder` is what its lock file says (pid, host, started)."""

    def __init__(self, workdir: str, holder: dict):
        who = f"pid {holder.get('pid', 'unknown')} on host {holder.get('host', 'unknown')}"
        since = f", started {holder['started']}" if "started" in holder else ""
        super().__init__(
            "workdir",
            f"{workdir} is in use by another run ({who}{since}; its lock is {os.path.join(workdir, LOCK_FILE)})",
            "wait for that run to end, or give this one another --workdir",
        )
        self.holder = holder


@contextlib.contextmanager
def hold(workdir: str | None) -> Iterator[None]:
    """Holds `workdir` for the run inside the `with` (on process 0); raises `WorkdirInUse` if another run holds it.

    Creates `workdir` if it does not exist (a `ConfigError` if it cannot be
    one) and, if the run leaves it empty, removes it again.
    """
    if workdir is None:
        yield
        return
    taken, error = None, None
    if is_chief():
        try:
            taken = _take(workdir)
        except ConfigError as raised:
            error = raised
    _agree(error)
    try:
        yield
    finally:
        if taken is not None:
            _release(workdir, *taken)


def _agree(error: ConfigError | None) -> None:
    """Raises `error` on process 0, and on every other process of a job an error saying process 0 could not lock."""
    if jax.process_count() > 1:
        failed = multihost_utils.process_allgather(np.array(error is not None, np.int32))
        if error is None and failed[0]:
            error = ConfigError("workdir", "process 0 could not take the workdir", "see process 0's message")
    if error is not None:
        raise error


def _take(workdir: str) -> tuple[int, list[str]]:
    """Locks `workdir`'s lock file and writes this run into it: `(its descriptor, the folders created for it)`."""
    if "://" in workdir:
        raise ConfigError(
            "workdir",
            f"{workdir!r} is a URL; podracer writes its workdir through the file system",
            "train into a local or NFS folder and copy it to the object store afterwards (see 'Preemption and resume')",
        )
    created, descriptor = _missing_folders(workdir), NOT_LOCKED
    try:
        os.makedirs(workdir, exist_ok=True)
        descriptor, previous = _lock(os.path.join(workdir, LOCK_FILE))
        if descriptor != NOT_LOCKED:
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, _holder_json(), 0)
    except OSError as error:
        _release(workdir, descriptor, created)
        why = f"{error.strerror}: {error.filename}" if error.filename else error.strerror
        if os.path.isfile(workdir):
            why = "it is a file"
        raise ConfigError(
            "workdir", f"{workdir} cannot be a workdir ({why})", "give --workdir a folder you can write"
        ) from None
    if previous:
        print(
            f"podracer: took over the lock of {workdir} from pid {previous.get('pid', 'unknown')} on host "
            f"{previous.get('host', 'unknown')}, a run that ended without releasing it (killed, or its machine stopped)",
            file=sys.stderr,
        )
    return descriptor, created


def _lock(path: str) -> tuple[int, dict]:
    """An open descriptor of `path` holding its `flock`, and what the file held before (a stale holder, or {}).

    Raises `WorkdirInUse` if a live process holds it. A holder that ends
    removes the file, so a lock taken on a file that is no longer at `path`
    is dropped and taken again on the new one.
    """
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(descriptor, wait=True)
            os.close(descriptor)
            raise WorkdirInUse(os.path.dirname(path), holder) from None
        except OSError as error:
            if error.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            os.close(descriptor)
            print(
                f"podracer: the file system of {path} has no locks ({error.strerror}); nothing stops another run "
                "from using this workdir at the same time",
                file=sys.stderr,
            )
            return NOT_LOCKED, {}
        with contextlib.suppress(FileNotFoundError):
            if os.path.samestat(os.fstat(descriptor), os.stat(path)):
                return descriptor, _read_holder(descriptor, wait=False)
        os.close(descriptor)  # Its holder removed it as we locked it: lock the new one.


def _read_holder(descriptor: int, wait: bool) -> dict:
    """What the lock file says of its holder; with `wait`, waits a moment for a holder that is still writing it."""
    for _ in range(READ_ATTEMPTS if wait else 1):
        try:
            holder = json.loads(os.pread(descriptor, 4096, 0))
            if isinstance(holder, dict):
                return holder
        except ValueError:
            pass
        if wait:
            time.sleep(READ_PAUSE_SECONDS)
    return {}


def _holder_json() -> bytes:
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": started}).encode()


def _release(workdir: str, descriptor: int, created: list[str]) -> None:
    """Removes the lock file, then unlocks it (a run waiting on the old file then locks a new one)."""
    if descriptor != NOT_LOCKED:
        with contextlib.suppress(OSError):  # Left behind, the file is unlocked: the next run takes it over.
            os.remove(os.path.join(workdir, LOCK_FILE))
        os.close(descriptor)
    _remove_if_empty(created)


def _missing_folders(path: str) -> list[str]:
    """The folders `os.makedirs(path)` would create, deepest first."""
    missing = []
    path = os.path.abspath(path)
    while not os.path.exists(path):
        missing.append(path)
        path = os.path.dirname(path)
    return missing


def _remove_if_empty(folders: list[str]) -> None:
    """Removes `folders` (deepest first) that are empty, so a run that wrote nothing leaves nothing behind."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            return
