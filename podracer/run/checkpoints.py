"""Checkpoints with orbax-checkpoint: saved every N updates and/or M minutes and at the end, the last K kept.

A run with a workdir checkpoints into `WORKDIR/checkpoints/<update>/`, two
items per checkpoint: `state`, the architecture's training state as arrays
(typed random keys are saved as their key data, which orbax can store), and
`meta`, JSON with the update and step counts, the run's wall time so far and
the resolved config. Orbax writes a checkpoint into a temporary folder and
renames it once complete, so a kill during a save leaves the earlier ones as
they were; a checkpoint that cannot be read is reported and the one before it
is used. Every process of a job calls `save` (orbax writes each array once);
time-based saves follow process 0's clock, so all processes agree.

Resuming is `config.resume`: `auto` resumes from the newest checkpoint if
there is one, `never` deletes the workdir's checkpoints and starts afresh,
`must` refuses to start without one. A checkpoint written with a config that
differs in a field that changes shapes or semantics is refused, naming the
fields; `SAFE_TO_CHANGE` lists the ones that may differ.
"""

import json
import os
import sys
import time
from typing import Any

import jax
import orbax.checkpoint as ocp
from ml_collections import ConfigDict

from podracer.config.errors import ConfigError
from podracer.run import disk_full, orbax_reports

# Fields a resumed run may change: how long it runs, how often and where it logs, saves and evaluates, how the host
# is set up, what auto-reset costs (a group's name covers its fields).
SAFE_TO_CHANGE = (
    "total_steps",
    "updates_per_dispatch",
    "log_records",
    "log_every_updates",
    "checkpoint",
    "resume",
    "stall_timeout_seconds",
    "stop_grace_seconds",
    "cpu_threads",
    "cpu_devices",
    "check_finite",
    "max_dispatch_seconds",
    "members_in_parallel",
    "logger",
    "evaluation",
    "env.reset_fraction",  # What resets cost, not what they do; older checkpoints lack it.
)
FOLDER = "checkpoints"


class Checkpointer:
    """Saves and restores one run's checkpoints; with no workdir it saves nothing and restores nothing."""

    def __init__(self, workdir: str | None, config: ConfigDict):
        """Opens `workdir`'s checkpoints and checks the newest against `config`; raises `ConfigError` if refused.

        Reads only JSON, so a refused resume costs no compilation.
        """
        self._config = config
        self._every_updates = config.checkpoint.every_updates
        self._every_seconds = 60.0 * config.checkpoint.every_minutes
        self._last_saved_update = None
        self._scheduled_update, self._scheduled_time = 0, time.monotonic()  # The last save `due` asked for.
        self.directory = os.path.abspath(os.path.join(workdir, FOLDER)) if workdir else None
        self._manager = None
        self.steps: list[int] = []  # The checkpoints found, newest first.
        self.newest: dict | None = None  # The metadata of the newest checkpoint a resume would start from.
        if self.directory is None:
            if config.resume == "must":
                raise ConfigError("resume", "'must' needs a workdir to resume from", "pass --workdir DIR")
            return
        if os.path.isdir(self.directory):
            self._manager = self._open()
            self.steps = sorted(self._manager.all_steps(), reverse=True)
        if config.resume == "never":
            return  # Its checkpoints are deleted at its first save, not before: bad input must change nothing.
        if not self.steps and config.resume == "must":
            raise ConfigError(
                "resume",
                f"'must' but {self.directory} holds no checkpoint",
                "check --workdir, or use --config.resume=auto to start afresh when there is none",
            )
        self.newest = next(
            (meta for update in self.steps if (meta := read_meta(self.directory, update)) is not None), None
        )
        if self.newest is not None:
            where = os.path.join(self.directory, str(self.newest["update"]))
            refuse_incompatible(self.newest["config"], config, where)

    def restore(self, like: Any) -> tuple[Any, dict] | None:
        """The newest readable checkpoint's `(state, meta)`, the state laid out as `like`; None without one.

        `like` is a training state of the run's shapes, dtypes and shardings
        (the freshly initialised one). A checkpoint that cannot be read is
        reported and skipped for the one before it.
        """
        if self._manager is None or self._config.resume == "never":
            return None
        target = jax.tree.map(_abstract, to_savable(like))
        for update in self.steps:
            try:
                with orbax_reports.held(explained=lambda error: True):  # Said below in one line.
                    restored = self._manager.restore(
                        update,
                        args=ocp.args.Composite(state=ocp.args.StandardRestore(target), meta=ocp.args.JsonRestore()),
                    )
            except Exception as error:  # noqa: BLE001 -- any unreadable checkpoint: fall back to the previous.
                reason = (str(error).strip().splitlines() or [type(error).__name__])[0].split(" [tensorstore_spec")[0]
                print(
                    f"podracer: checkpoint {self.directory}/{update} cannot be read ({reason}); trying an older one",
                    file=sys.stderr,
                )
                continue
            self._last_saved_update = self._scheduled_update = update
            if jax.process_index() == 0:
                print(
                    f"podracer: resuming from {self.directory}/{update}: step {restored.meta['step']:,}"
                    + device_change(restored.meta.get("devices"), devices_holding(like)),
                    file=sys.stderr,
                )
            return from_savable(restored.state, like), restored.meta
        if self.steps and self._config.resume == "must":
            raise ConfigError("resume", f"no checkpoint in {self.directory} can be read", "use --config.resume=never")
        return None

    def due(self, update: int) -> bool:
        """Whether this process's checkpoint schedule asks for a save after `update` updates.

        A `True` counts as the save done for the schedule, so a save that runs
        later (Sebulba's, on the main thread) is not asked for twice.
        """
        if self.directory is None:
            return False
        by_count = self._every_updates and update - self._scheduled_update >= self._every_updates
        by_time = self._every_seconds and time.monotonic() - self._scheduled_time >= self._every_seconds
        if by_count or by_time:
            self._scheduled_update, self._scheduled_time = update, time.monotonic()
        return bool(by_count or by_time)

    def where(self) -> str:
        """Where a stop's checkpoint went, for the message that ends the run."""
        return f"checkpoint written to {self.directory}" if self.directory else "no workdir to checkpoint to"

    def save(self, update: int, state: Any, meta: dict) -> None:
        """Writes the checkpoint of `update` (every process calls this); does nothing without a workdir."""
        if self.directory is None or update == self._last_saved_update:
            return
        where = f"writing checkpoint {update}"
        with (
            disk_full.reported(where, self.directory, lambda: newest_saved(self.directory)),
            orbax_reports.held(explained=lambda error: disk_full.full_reason(error) is not None),
        ):
            if self._manager is None:
                self._manager = self._open()
            if self._config.resume == "never" and self._last_saved_update is None:
                for step in self._manager.all_steps():  # The earlier run's, at this run's first save.
                    self._manager.delete(step)
            meta = {**meta, "update": update, "devices": devices_holding(state), "config": self._config.to_dict()}
            self._manager.save(
                update,
                args=ocp.args.Composite(state=ocp.args.StandardSave(to_savable(state)), meta=ocp.args.JsonSave(meta)),
            )
            self._manager.wait_until_finished()
        self._last_saved_update = update

    def _open(self) -> ocp.CheckpointManager:
        return ocp.CheckpointManager(
            self.directory,
            item_names=("state", "meta"),
            options=ocp.CheckpointManagerOptions(
                max_to_keep=self._config.checkpoint.keep,
                create=True,
                enable_async_checkpointing=False,
                cleanup_tmp_directories=True,  # A save a kill interrupted leaves a temporary folder: removed here.
            ),
        )

    def close(self) -> None:
        if self._manager is not None:
            self._manager.close()


def devices_holding(state: Any) -> int:
    """How many devices `state`'s arrays are spread over: the run's, recorded with each checkpoint."""
    return max(len(leaf.sharding.device_set) for leaf in jax.tree.leaves(state) if isinstance(leaf, jax.Array))


def device_change(saved: int | None, now: int) -> str:
    """What a resume's line adds when the checkpoint was written on another number of devices (older checkpoints
    did not record it): a run is deterministic for a device count, so from here it leaves the course it was on."""
    if saved is None or saved == now:
        return ""
    return (
        f", written on {saved} devices and continued on {now} (another machine, or another cpu_devices): "
        "from here the run differs from one that had not stopped"
    )


def read_meta(directory: str, update: int) -> dict | None:
    """The metadata of `directory`'s checkpoint of `update` (update, step, config, ...); None if it cannot be read."""
    try:
        with open(os.path.join(directory, str(update), "meta", "metadata")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def newest_saved(directory: str) -> tuple[str, int] | None:
    """The newest checkpoint in `directory` whose metadata can be read, as `(its folder, its step)`; None if none."""
    updates = [int(name) for name in os.listdir(directory) if name.isdigit()] if os.path.isdir(directory) else []
    for update in sorted(updates, reverse=True):
        if (meta := read_meta(directory, update)) is not None:
            return os.path.join(directory, str(update)), meta["step"]
    return None


def refuse_incompatible(saved: dict, config: ConfigDict, where: str) -> None:
    """Raises `ConfigError` naming every field, other than `SAFE_TO_CHANGE`, whose value differs from `saved`."""
    now, then = _flatten(json.loads(config.to_json())), _flatten(saved)
    changed = sorted(
        field
        for field in set(now) | set(then)
        if now.get(field) != then.get(field) and not _safe_to_change(field, config)
    )
    if changed:
        differences = ", ".join(
            f"{field} (checkpoint {then.get(field)!r}, now {now.get(field)!r})" for field in changed
        )
        raise ConfigError(
            changed[0],
            f"the checkpoint {where} was written with a different config: {differences}",
            "resume with the checkpoint's values, use another --workdir, or --config.resume=never to start afresh",
        )


def _safe_to_change(field: str, config: ConfigDict) -> bool:
    if field == "total_steps" and config.get("optimizer", {}).get("anneal_lr"):
        return False  # The learning rate's schedule spans the whole run.
    return field in SAFE_TO_CHANGE or field.split(".")[0] in SAFE_TO_CHANGE


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for name, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = tuple(value) if isinstance(value, list) else value
    return flat


def _is_key(x: Any) -> bool:
    return isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def to_savable(tree: Any) -> Any:
    """`tree` with every typed random key replaced by its key data (orbax stores arrays of numbers only)."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if _is_key(x) else x, tree)


def from_savable(saved: Any, like: Any) -> Any:
    """Undoes `to_savable`, with the key implementations and shardings of `like`."""

    def restore(value, reference):
        if _is_key(reference):
            value = jax.random.wrap_key_data(value, impl=jax.random.key_impl(reference))
        return jax.device_put(value, reference.sharding)

    return jax.tree.map(restore, saved, like)


def _abstract(x: jax.Array) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)
