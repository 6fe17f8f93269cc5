"""Running a sweep's trials: a group of them as the members of one Anakin program, or one trial alone.

A group is trials that differ only in fields members of one program may
differ in (`search_space.shares_program`): Anakin runs them as a population
(`podracer.config.population`), one member per trial, so each computes what
it computes alone up to float rounding. A group of one (a Sebulba trial, or
`--parallel 1`) is the trial's config itself, run alone.

While a group runs, `TrialWatch` reads every log record: it reports each
trial's metric to Optuna, for its pruner, and marks a trial failed at its
first non-finite loss. A population keeps training its pruned and failed
members (they share the program) and stops once none is left going.
"""

import dataclasses
import math
import os
import socket
import time
from typing import Any

import numpy as np
from ml_collections import ConfigDict

from podracer.config import population
from podracer.config.errors import ConfigError
from podracer.run.contract import LogEvent, recent_return
from podracer.run.metrics_writer import MEMBERS
from podracer.tuning.search_space import with_values

COMPLETE, PRUNED, FAIL = "complete", "pruned", "fail"
# The fields of a record that are no loss: a member's episodes may be few, or none (NaN), without anything wrong.
EPISODE_FIELDS = {"step", "member", "episodes", "mean_episode_return", "mean_episode_length"}
# A trial's user attributes in Optuna's storage.
VALUES = "values"  # Its config values, as the config takes them.
GROUP = "group"  # Its group's folder under WORKDIR/trials.
REASON = "reason"  # Why it failed, where it did.
RUNNER = "runner"  # The host and process that runs it (`runner_id`).
HEARTBEAT = "heartbeat"  # When its run last logged (seconds since the epoch).


@dataclasses.dataclass
class Outcome:
    """How a trial ended: its state, its objective (None for a failure) and, for a failure, why."""

    state: str = COMPLETE  # Until it is pruned or fails.
    value: float | None = None
    reason: str = ""


class GroupFinished(Exception):
    """Raised by `TrialWatch` when every trial of a group is pruned or failed: the run stops there."""


def values_of(trial: Any) -> dict:
    """A trial's config values (its `values` user attribute), with the tuples Optuna's JSON storage made lists."""
    return {field: tuple(v) if isinstance(v, list) else v for field, v in trial.user_attrs.get(VALUES, {}).items()}


def group_config(config: ConfigDict, trial_values: list[dict]) -> ConfigDict:
    """The config that runs the group's trials: the trial's own alone, or a population of one member per trial
    (the search's program fields are the same for all of them, its other fields listed per member)."""
    if len(trial_values) == 1:
        return with_values(config, trial_values[0])
    first = trial_values[0]
    shared = {field: value for field, value in first.items() if not population.can_vary(config, field)}
    varied = {
        f"{population.FIELD}.{field}": tuple(float(values[field]) for values in trial_values)
        for field in first
        if field not in shared
    }
    group = with_values(config, {**shared, "check_finite": False})  # A diverging member fails alone (TrialWatch).
    return with_values(group, {f"{population.FIELD}.seed": (config.seed,) * len(trial_values), **varied})


def objective(records: list[dict], metric: str) -> float:
    """A run's objective from its records: the mean return of its last 100 episodes for `mean_episode_return`
    (the learning tests' measure), of its last evaluations' for `eval_mean_return`, and otherwise the metric's
    last finite value. NaN when it has none."""
    if metric in ("mean_episode_return", "eval_mean_return"):
        return recent_return(records, evaluated=metric == "eval_mean_return")
    values = [record[metric] for record in records if _finite(record.get(metric))]
    return float(values[-1]) if values else math.nan


def member_records(history: list[dict], members: int) -> list[list[dict]]:
    """Each trial's records: a population's per member, or a lone run's own."""
    if not members:
        return [list(history)]
    return [[record[MEMBERS][member] for record in history] for member in range(members)]


class TrialWatch:
    """A `podracer.train` callback that reports each trial's metric to Optuna and fails those that diverge."""

    def __init__(self, trials: list[Any], metric: str):
        """`trials`: the group's `optuna.trial.Trial`s, in member order."""
        self.trials, self.metric = trials, metric
        self.outcomes = [Outcome() for _ in trials]

    def __call__(self, event: LogEvent) -> None:
        lines = event.record.get(MEMBERS) or [event.record]
        self._check_metric(lines[0])
        for trial, outcome, line in zip(self.trials, self.outcomes, lines, strict=True):
            if outcome.state != COMPLETE:
                continue
            losses = {name: value for name, value in line.items() if _is_loss(name, value)}
            if bad := [name for name, value in losses.items() if not math.isfinite(value)]:
                outcome.state, outcome.reason = FAIL, f"non-finite {', '.join(bad)} by step {line['step']:,}"
                continue
            if _finite(line.get(self.metric)):
                trial.report(float(line[self.metric]), int(line["step"]))
                if trial.should_prune():
                    outcome.state = PRUNED
            trial.set_user_attr(HEARTBEAT, time.time())
        if all(outcome.state != COMPLETE for outcome in self.outcomes) and not event.final:
            raise GroupFinished

    def _check_metric(self, line: dict) -> None:
        if self.metric in line or self.metric.startswith("eval_"):  # Evaluations come on their own schedule.
            return
        logged = sorted(name for name, value in line.items() if isinstance(value, int | float) and name != "member")
        raise ConfigError("--metric", f"{self.metric!r} is not logged by this run", f"choose one of {logged}")

    def finish(self, history: list[dict], members: int) -> list[Outcome]:
        """Each trial's outcome once its run has ended: the objective of those still going, from their records."""
        for outcome, records in zip(self.outcomes, member_records(history, members), strict=True):
            if outcome.state == COMPLETE:
                outcome.value = objective(records, self.metric)
                if not math.isfinite(outcome.value):
                    outcome.state, outcome.reason = FAIL, f"no finite {self.metric} logged"
        return self.outcomes


def runner_id() -> str:
    """This process, as `host:pid`: a trial left running by a process that is gone is resumed by the next sweep."""
    return f"{socket.gethostname()}:{os.getpid()}"


def runner_gone(runner: str, heartbeat: float | None, grace_seconds: float) -> bool:
    """Whether the process `runner` (`runner_id`) has stopped: on this host, by its pid; on another, by its
    heartbeat, older than `grace_seconds`."""
    host, _, pid = runner.rpartition(":")
    if host != socket.gethostname():
        return heartbeat is None or time.time() - heartbeat > grace_seconds
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, PermissionError):  # No process has the pid, or another user's has it now.
        return True
    return int(pid) == os.getpid()  # This process's own, left by a sweep it ran before (and stopped).


def _is_loss(name: str, value: Any) -> bool:
    return name not in EPISODE_FIELDS and not name.startswith("eval_") and isinstance(value, float)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float | np.floating) and math.isfinite(value)
