"""Weights & Biases: a run's log records, its resolved config and its evaluation videos, sent to a wandb run.

`logger.wandb.project` turns it on: `podracer.train` then starts a `WandbLogger`
on process 0 of the job before anything is built, attaches it as one more
run-contract callback, and finishes the wandb run however the run ends (its
exit code marks an exception or a stop signal). wandb is the optional extra
`pip install -e '.[wandb]'`, imported only when a config turns it on.

Each record is logged at its `step`, the environment step count, with the
scalars TensorBoard gets (`metrics_writer.scalars`: a population's members as
`member_I/NAME`). With a workdir, wandb's files go to `WORKDIR/wandb/` (unless
`WANDB_DIR` says otherwise), the run is named after the workdir's folder, and
its id is kept in `WORKDIR/wandb_run_id`: a run that resumes from its
checkpoints, after a preemption say, continues the same wandb run
(`resume="allow"`). wandb keeps only increasing steps, so the records between
the checkpoint and the interruption, which the resumed run computes again,
keep their first values there.

Any other tracker attaches the same way, as a callback passed to
`podracer.train(config, callbacks=[...])` (see docs/configuring.md).
"""

import os
import secrets
import shutil
import string
from typing import Any

from ml_collections import ConfigDict

from podracer.config import field_checks
from podracer.config.errors import ConfigError
from podracer.devices.distributed import is_chief
from podracer.run.contract import LogEvent
from podracer.run.metrics_writer import scalars
from podracer.run.stopping import StoppedBySignal
from podracer.run.whole_files import write_text

# "" leaves the choice to wandb (the WANDB_MODE environment variable, else online); "disabled" turns the logger off.
MODES = ("", "online", "offline", "disabled")
ID_FILE = "wandb_run_id"  # In the workdir: the wandb run a resumed run continues.
VIDEO_KEY = "evaluation/video"
MAX_TAG_LENGTH = 64  # wandb refuses longer tags.

_active: "WandbLogger | None" = None  # The logger of the run under way in this process, for `log_video`.


def add_defaults(config: ConfigDict) -> None:
    """The `logger` group: wandb is off (an empty project); TensorBoard and metrics.jsonl are always written."""
    config.logger = ConfigDict(
        {
            "wandb": {
                "project": "",  # The wandb project to log to; "" is off.
                "entity": "",  # The team or user that owns the project; "" is wandb's default entity.
                "name": "",  # The run's name; "" is the workdir's folder name (wandb's own name without one).
                "group": "",  # Groups runs in wandb's interface (the seeds of one experiment, say).
                "tags": (),  # Strings to filter runs by.
                "mode": "",  # online, offline (sync later with `wandb sync`), disabled; "" is WANDB_MODE, else online.
            }
        }
    )


def validate(config: ConfigDict) -> None:
    """The `logger.wandb` fields' values (whether wandb is installed is checked when the run starts)."""
    field_checks.choice(config, "logger.wandb.mode", MODES)
    tags = field_checks.get(config, "logger.wandb.tags")
    if not isinstance(tags, (tuple, list)) or not all(
        isinstance(tag, str) and 0 < len(tag) <= MAX_TAG_LENGTH for tag in tags
    ):
        raise ConfigError(
            "logger.wandb.tags",
            f"must be a tuple of strings of 1 to {MAX_TAG_LENGTH} characters, got {tags!r}",
            "set e.g. --config.logger.wandb.tags=\"('ppo', 'baseline')\"",
        )


class WandbLogger:
    """A run-contract callback that logs every record to a wandb run; a context manager that finishes it."""

    def __init__(self, run: Any, first_step: int = 0):
        """`run` is a started wandb run; records before `first_step` (those a resumed wandb run has) are skipped."""
        self.run = run
        self._first_step = first_step

    def __call__(self, event: LogEvent) -> None:
        step = event.record["step"]
        if step >= self._first_step:
            self.run.log(scalars(event.record), step=step)

    def log_video(self, path: str, step: int, key: str = VIDEO_KEY) -> None:
        """Logs the video file at `path` (.mp4, .gif, .webm or .ogg) under `key` at environment step `step`."""
        import wandb

        self.run.log({key: wandb.Video(path)}, step=step)

    def __enter__(self) -> "WandbLogger":
        global _active
        _active = self
        return self

    def __exit__(self, error_type: type | None, error: BaseException | None, traceback: Any) -> None:
        """Finishes the wandb run: exit code 0, 128 + the signal's number for a stop signal, 1 for an exception."""
        global _active
        _active = None
        if error is None:
            code = 0
        else:
            code = 128 + error.signal_number if isinstance(error, StoppedBySignal) else 1
        self.run.finish(exit_code=code)


def start(config: ConfigDict, workdir: str | None) -> WandbLogger | None:
    """A `WandbLogger` on a new or resumed wandb run, on process 0 when `logger.wandb.project` is set; else None.

    Raises `ConfigError` naming `logger.wandb.project` when wandb is not
    installed, and `logger.wandb.mode` when wandb cannot start its run (not
    logged in, say), before anything is built.
    """
    settings = config.logger.wandb
    if not settings.project or settings.mode == "disabled" or not is_chief():
        return None
    try:
        import wandb
    except ImportError as error:
        raise ConfigError(
            "logger.wandb.project",
            f"is set, but wandb cannot be imported ({error})",
            "install the extra: pip install -e '.[wandb]' (or pip install wandb), or leave the project empty",
        ) from None
    kept_id = _kept_id(workdir) if config.resume != "never" else None
    run_id = kept_id or (_new_id() if workdir else None)  # Without a workdir, wandb names a run of its own.
    created = bool(workdir) and not os.path.exists(workdir)
    if workdir:
        os.makedirs(workdir, exist_ok=True)  # wandb's files go there, and it looks for a git repository from it.
    try:
        run = wandb.init(
            project=settings.project,
            entity=settings.entity or None,
            name=settings.name or (os.path.basename(os.path.abspath(workdir)) if workdir else None),
            group=settings.group or None,
            tags=list(settings.tags),
            mode=settings.mode or None,
            config=config.to_dict(),
            dir=workdir if workdir and not os.environ.get("WANDB_DIR") else None,
            id=run_id,
            resume="allow" if run_id else None,
            allow_val_change=True,  # A resumed run may change what resuming allows (total_steps, say).
            reinit="create_new",  # Leaves any run of the caller's own as it is.
        )
    except wandb.Error as error:
        if created:  # Bad input leaves nothing behind.
            shutil.rmtree(workdir, ignore_errors=True)
        raise ConfigError(
            "logger.wandb.mode",
            f"wandb could not start the run ({error})",
            "log in with `wandb login` (or set WANDB_API_KEY), or set --config.logger.wandb.mode=offline "
            "and upload later with `wandb sync`",
        ) from None
    if run_id and run_id != kept_id:  # Written once the run has started: a failed start keeps no id.
        write_text(os.path.join(workdir, ID_FILE), run_id + "\n")
    return WandbLogger(run, first_step=run.step if run.resumed else 0)


def log_video(path: str, step: int, key: str = VIDEO_KEY) -> None:
    """Logs a video file to the wandb run of the run under way in this process; does nothing without one.

    For evaluations that render videos: they call this whether or not wandb is on.
    """
    if _active is not None:
        _active.log_video(path, step, key)


def _kept_id(workdir: str | None) -> str | None:
    """The wandb run id a workdir keeps, if it has one."""
    path = os.path.join(workdir, ID_FILE) if workdir else None
    if path is None or not os.path.isfile(path):
        return None
    with open(path) as f:
        return f.read().strip() or None


def _new_id() -> str:
    """A run id as wandb makes them: 8 lowercase letters and digits."""
    return "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(8))
