"""A full disk said plainly: what could not be written, where, the last good checkpoint, and how to resume.

A workdir's disk can fill up mid-run (or its quota run out). The error then
surfaces deep inside orbax, TensorStore or a file write, as a long traceback.
`reported` turns it, at the checkpoint save and the metrics writer, into
`DiskFull`, whose message is a few lines the command line prints as they
are. Nothing more is written after it: orbax never renamed the failed save's
temporary folder into a checkpoint (the next run removes it), so the earlier
checkpoints stay as they were and a run started again once space is freed
resumes from the newest.
"""

import contextlib
import errno
import os
from collections.abc import Callable, Iterator

FULL = (errno.ENOSPC, errno.EDQUOT)
# TensorStore reports a failed write as a ValueError whose text carries the operating system's message, not an errno.
FULL_TEXTS = ("No space left on device", "Disk quota exceeded")


class DiskFull(RuntimeError):
    """A write failed because the disk (or the quota) is full; the message says what to do."""

    def __init__(self, what: str, path: str, reason: str, checkpoint: tuple[str, int] | None):
        """`what` failed writing `path` for `reason`; `checkpoint` is the newest on disk, `(its folder, its step)`."""
        if checkpoint is None:
            after = "No checkpoint was written before it; once space is freed, the same command starts afresh."
        else:
            folder, step = checkpoint
            after = (
                f"The checkpoints are intact: the last good one is {folder} (step {step:,}).\n"
                f"To resume, free space on that disk and run the same command again: it resumes from step {step:,}."
            )
        super().__init__(f"the disk is full ({reason}): {what} to {path} failed.\n{after}")
        self.path = path
        self.checkpoint = checkpoint


def full_reason(error: BaseException) -> str | None:
    """The operating system's words if `error`, or one it was raised from or during, is a full disk or quota; else None."""
    for cause in _chain(error):
        if isinstance(cause, OSError) and cause.errno in FULL:
            return os.strerror(cause.errno)
        if text := next((text for text in FULL_TEXTS if text in str(cause)), None):
            return text
    return None


@contextlib.contextmanager
def reported(what: str, path: str, checkpoint: Callable[[], tuple[str, int] | None]) -> Iterator[None]:
    """Raises `DiskFull` for a full disk inside the `with`; `checkpoint()` finds the newest checkpoint left.

    A full disk met while an earlier `DiskFull` is being raised (closing the
    files as the run ends) raises that earlier one: it says what failed first.
    """
    try:
        yield
    except Exception as error:
        reason = full_reason(error)
        if reason is None:
            raise
        earlier = next((cause for cause in _chain(error) if isinstance(cause, DiskFull)), None)
        raise earlier or DiskFull(what, path, reason, checkpoint()) from None


def _chain(error: BaseException) -> Iterator[BaseException]:
    """`error`, the errors it was raised from or while handling, and those of an exception group, each once."""
    seen, pending = set(), [error]
    while pending:
        error = pending.pop()
        if error is not None and id(error) not in seen:
            seen.add(id(error))
            yield error
            pending += [error.__cause__, error.__context__, *getattr(error, "exceptions", ())]
