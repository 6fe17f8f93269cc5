"""The host loop of `podracer meta-train`: build and compile once, then dispatch, record, checkpoint, save the rule.

The config and the program are `podracer.experiment.meta_train`'s and
`podracer.anakin.meta_program`'s. Everything between two records happens in
one compiled program; the state (meta-network, its optimiser, every member
with its environments and keys) is checkpointed whole, so a resumed run goes
on bitwise as if it had not stopped.
"""

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from ml_collections import ConfigDict

from podracer.agents.meta import lpg_rule, rule_checkpoint
from podracer.anakin import meta_members
from podracer.anakin import meta_program as program
from podracer.config.errors import count
from podracer.devices import distributed
from podracer.devices.device_split import anakin_devices, replication_line
from podracer.devices.topology import device_mesh
from podracer.envs.episodes import Completed
from podracer.experiment import meta_train as meta_config
from podracer.run import budget, workdir_lock
from podracer.run.checkpoint_steps import restore_into, save_or_stop
from podracer.run.checkpoints import Checkpointer
from podracer.run.contract import Callback, RunLog, episode_summary
from podracer.run.stopping import stop_signals


@dataclasses.dataclass
class MetaRun:
    settings: meta_members.Settings
    families: tuple[meta_members.Family, ...]
    state: program.MetaState
    dispatch: Callable  # Compiled: (state, updates) -> (state, outputs).
    steps_per_update: int  # Inner environment steps per meta-update, over every member.
    update: int = 0  # Meta-updates done.


def meta_train(config: ConfigDict, *, workdir: str | None = None, callbacks: Sequence[Callback] = ()) -> list[dict]:
    """Meta-trains the rule `config` describes; returns the records. With `workdir`: logs, checkpoints, `rule/`.

    Raises `ConfigError` naming the field before anything is compiled or written.
    """
    meta_config.validate(config)
    distributed.start(config, meta_config.device_shares(config))
    with workdir_lock.hold(workdir):
        started = time.perf_counter()
        checkpointer = Checkpointer(workdir, config)
        try:
            run = build(config)
            resumed = restore_into(checkpointer, run)
            total_steps = config.meta.updates * run.steps_per_update
            log = RunLog(workdir, config, total_steps, callbacks, started, resumed)
            try:
                dispatch_until_done(config, run, log, checkpointer, workdir)
            finally:
                log.close()
        finally:
            checkpointer.close()
    return log.history


def build(config: ConfigDict) -> MetaRun:
    """The mesh, the families, the initial state and the compiled dispatch."""
    program = uncompiled(config)
    run = program.run(program.lower().compile())
    if distributed.is_chief():  # Once everything has compiled: a refused config says only why.
        members = sum(family.members for family in program.families) // len(program.devices)
        print(replication_line(config, program.devices, count(members, "member")), file=sys.stderr)
    return run


@dataclasses.dataclass(frozen=True)
class Uncompiled:
    """A run before its dispatch is compiled: `build` is `run(lower().compile())`, and
    `scripts/meta_compile_cost.py` times the lowering and XLA's compilation apart."""

    devices: list[jax.Device]  # The run replicates over these.
    settings: meta_members.Settings
    families: tuple[meta_members.Family, ...]
    init: Callable  # Jitted: key -> MetaState, placed on the mesh.
    key: jax.Array
    dispatch: Callable  # Jitted, not yet lowered: (state, updates) -> (state, outputs).
    per_dispatch: int  # Meta-updates per dispatch.
    steps_per_update: int

    def lower(self) -> jax.stages.Lowered:
        """The dispatch lowered (traced to StableHLO) for the initial state's shapes and shardings."""
        return self.dispatch.lower(self.init.eval_shape(self.key), np.int32(self.per_dispatch))

    def run(self, dispatch: Callable) -> MetaRun:
        """The run at its initial state, dispatching with `dispatch` (this one's, compiled)."""
        return MetaRun(self.settings, self.families, self.init(self.key), dispatch, self.steps_per_update)


def uncompiled(config: ConfigDict) -> Uncompiled:
    """The mesh, the families, the initial state's program and the dispatch's, nothing compiled yet."""
    devices = anakin_devices(config)
    families = meta_config.families(config, len(devices))  # Members a multiple of the devices, found before compiling.
    mesh = device_mesh(devices)
    run_settings = meta_config.settings(config)
    agent_for = meta_config.rule_agent(config, run_settings)
    meta_optimizer = meta_config.meta_optimizer(config)
    init = program.make_init(families, agent_for(None), meta_optimizer, run_settings, mesh)  # Only its init is used.
    per_dispatch = min(config.meta.updates_per_dispatch, config.meta.updates)
    dispatch = program.make_dispatch(families, agent_for, meta_optimizer, run_settings, mesh, per_dispatch)
    members = sum(family.members for family in families)
    steps = run_settings.inner_updates * config.unroll_length * run_settings.envs_per_member * members
    return Uncompiled(devices, run_settings, families, init, run_key(config), dispatch, per_dispatch, steps)


def run_key(config: ConfigDict) -> jax.Array:
    """The key a run's initial state is drawn from (`meta_program.make_init`)."""
    return jax.random.key(config.seed)


def untrained_rule(config: ConfigDict) -> tuple[Any, lpg_rule.RuleSettings]:
    """The rule a run of `config` starts from, before its first meta-update, and its settings (`save_rule`'s
    arguments): what the run's meta-updates are measured against. Computed without building the run's program."""
    run_settings = meta_config.settings(config)
    return program.initial_rule(run_key(config), meta_config.families(config), run_settings), run_settings.rule


def dispatch_until_done(config: ConfigDict, run: MetaRun, log: RunLog, checkpointer: Checkpointer, workdir) -> None:
    """Dispatches until `meta.updates`; records each dispatch, checkpoints (and writes the rule) when due and at the end.

    SIGINT and SIGTERM stop the run after the dispatch under way and its checkpoint (`StoppedBySignal`).
    """
    total, per_dispatch = config.meta.updates, config.meta.updates_per_dispatch
    stop_requests: list[int] = []

    def write_rule() -> None:
        if workdir and jax.process_index() == 0:
            save_rule(os.path.join(workdir, meta_config.RULE_FOLDER), run)

    with stop_signals(stop_requests.append):
        last_time = time.perf_counter()
        while run.update < total:
            updates = budget.next_stretch(run.update, total, per_dispatch)
            run.state, outputs = run.dispatch(run.state, np.int32(updates))
            outputs = jax.tree.map(lambda x: x[:updates], jax.device_get(outputs))
            run.update += updates
            record = make_record(run.update, run.update * run.steps_per_update, outputs)
            record["steps_per_second"] = updates * run.steps_per_update / (time.perf_counter() - last_time)
            log.report(record, run.state)
            due = checkpointer.due(run.update) or run.update >= total
            save_or_stop(checkpointer, run.update, run.state, record, stop_requests, due, on_save=write_rule)
            last_time = time.perf_counter()


def save_rule(path: str, run: MetaRun) -> None:
    """The meta-network, as `learned_rule` loads it (`rule_checkpoint`)."""
    rule_checkpoint.save_rule(path, run.state.meta_params, run.settings.rule)


def make_record(update: int, step: int, outputs: dict) -> dict:
    """A dispatch's record: the meta-loss and its terms averaged over its meta-updates, the episodes pooled over its
    families (`mean_episode_return`) and each family's mean return (`return/LABEL`)."""
    record = {"step": step, "meta_update": update}
    record.update({name: float(np.mean(value)) for name, value in outputs["scalars"].items()})
    pooled = [Completed(*(np.sum(x) for x in completed)) for completed in outputs["episodes"].values()]
    record.update(episode_summary(Completed(*(sum(parts) for parts in zip(*pooled, strict=True)))))
    for label, completed in zip(outputs["episodes"], pooled, strict=True):
        record[f"return/{label}"] = episode_summary(completed)["mean_episode_return"]
    return record
