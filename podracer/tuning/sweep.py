"""`podracer sweep`: a hyperparameter search with Optuna, its trials run many at a time inside one Anakin program.

    podracer sweep --config configs/anakin_cartpole_ppo.py --space configs/spaces/cartpole_ppo.yaml \\
        --trials 64 --parallel 16 --workdir runs/sweep

Optuna's sampler asks for `--parallel` trials at a time; trials that differ
only in fields one program can vary run as the members of one population,
the others one program per value of the fields that fix shapes
(`trial_runs`). Each trial's log records reach Optuna's pruner as they come.
Everything lives in the workdir: Optuna's storage (`optuna.db`, SQLite, which
`optuna-dashboard` reads), each group's run under `trials/`, and the results
(`sweep_results`). A sweep started again on its workdir goes on: the trials
it finished stay, those a killed sweep left running resume from their runs'
checkpoints, and it asks for new ones until `--trials` have finished.
"""

import dataclasses
import math
import os
import sys
import warnings
from collections.abc import Callable

import optuna
from ml_collections import ConfigDict

from podracer.config.errors import ConfigError, UsageError
from podracer.experiment.schema import load_config, validate
from podracer.run import evaluation
from podracer.run.finite import NonFiniteError
from podracer.tuning import search_space, sweep_results, trial_runs
from podracer.tuning.search_space import Space
from podracer.tuning.trial_runs import (
    FAIL,
    GROUP,
    HEARTBEAT,
    PRUNED,
    REASON,
    RUNNER,
    VALUES,
    GroupFinished,
    TrialWatch,
)

STUDY = "podracer"
GRACE_SECONDS = 600.0  # A trial run on another host is taken over once its heartbeat is this old.


@dataclasses.dataclass(frozen=True)
class Sweep:
    """What a sweep searches and how: the config it starts from (with the path and overrides it was read from)."""

    config: ConfigDict
    config_path: str
    overrides: dict
    space: Space
    workdir: str
    trials: int
    parallel: int = 1
    metric: str = "mean_episode_return"
    direction: str = "maximize"
    sampler: str = "tpe"
    pruner: str = "none"


def prepare(config_path: str, overrides: dict, space_path: str, workdir: str, **search) -> Sweep:
    """The sweep of the config file with `overrides` over the space file, checked before any trial starts: a
    `ConfigError` naming the field for a config or space that cannot work, a `UsageError` for a flag.

    `search` holds `Sweep`'s other fields (`trials`, `parallel`, `metric`, ...).
    """
    config = load_config(config_path, overrides)
    validate(config)
    space = search_space.read(space_path)
    search_space.validate(space, config, validate)
    sweep = Sweep(config, config_path, dict(overrides), space, workdir, **search)
    if sweep.parallel > 1 and config.architecture != "anakin":
        raise UsageError(
            f"--parallel {sweep.parallel}: {config.architecture} runs one trial at a time (its actors step host "
            "environments, which no program vmaps); pass --parallel 1, and start more `podracer sweep` processes on "
            "the same workdir, each on devices of its own, to run trials side by side"
        )
    if sweep.sampler == "grid" and (ranges := [field for field, dim in space.items() if dim.choices is None]):
        raise ConfigError(ranges[0], "is a range, and a grid search needs choices", "list its values as choices")
    if sweep.sampler == "grid" and sweep.trials > grid_size(space):
        print(f"podracer sweep: the grid has {grid_size(space)} points; running as many trials", file=sys.stderr)
        sweep = dataclasses.replace(sweep, trials=grid_size(space))
    if sweep.metric.startswith("eval_") and not evaluation.enabled(config):
        raise ConfigError(
            "--metric", f"{sweep.metric!r} is an evaluation's, and the config evaluates nothing", EVALUATION_FIX
        )
    return sweep


EVALUATION_FIX = "set --config.evaluation.every_steps=N, or choose a metric the runs log, like mean_episode_return"
Train = Callable[..., object]  # podracer.train's signature: (config, *, workdir, callbacks) -> TrainResult.


def run(sweep: Sweep, train: Train) -> optuna.Study:
    """Runs the sweep until `sweep.trials` trials have finished; returns its study. Writes the results after each
    group of trials."""
    study = open_study(sweep)
    print(search_space.describe(sweep.space, sweep.config, sweep.parallel), file=sys.stderr)
    for group, trials in left_running(study).items():
        run_group(sweep, study, group, trials, train)
    ask_and_run(sweep, study, train)
    sweep_results.write(sweep, study)
    return study


def ask_and_run(sweep: Sweep, study: optuna.Study, train: Train) -> None:
    """Asks for trials, `--parallel` at a time, and runs them, until enough have finished or are under way."""
    while (wanted := sweep.trials - len(finished(study)) - len(running(study))) > 0:
        trials = [study.ask() for _ in range(min(sweep.parallel, wanted))]
        for trial in trials:
            values = suggest(trial, sweep.space)
            trial.set_user_attr(VALUES, values)
            trial.set_user_attr(RUNNER, trial_runs.runner_id())
        for group in by_program(sweep, trials).values():
            name = f"trial_{group[0].number:04d}"
            for trial in group:
                trial.set_user_attr(GROUP, name)
            run_group(sweep, study, name, group, train)


def run_group(sweep: Sweep, study: optuna.Study, name: str, trials: list, train: Train) -> None:
    """Trains the group's trials (a killed group resumes from its run's checkpoint) and tells Optuna how each ended."""
    values = [trial_runs.values_of(trial) for trial in trials]
    try:
        config = trial_runs.group_config(sweep.config, values)
        validate(config)
    except ConfigError as error:  # A combination the config refuses: those trials failed, the sweep goes on.
        for trial in trials:
            tell(study, trial, trial_runs.Outcome(FAIL, reason=str(error)))
        return
    if config.logger.wandb.project and not config.logger.wandb.group:  # The sweep's runs, grouped in wandb.
        with config.unlocked():
            config.logger.wandb.group = os.path.basename(os.path.abspath(sweep.workdir))
    watch = TrialWatch(trials, sweep.metric)
    workdir = os.path.join(sweep.workdir, "trials", name)
    history, members = None, len(trials) if len(trials) > 1 else 0
    try:
        history = train(config, workdir=workdir, callbacks=[watch]).history
    except GroupFinished:
        pass
    except NonFiniteError as error:  # A trial alone stops at its first non-finite value.
        watch.outcomes[0] = trial_runs.Outcome(FAIL, reason=str(error).splitlines()[0])
    records = history if history is not None else sweep_results.read_history(workdir)
    for trial, outcome in zip(trials, watch.finish(records, members), strict=True):
        tell(study, trial, outcome)
    sweep_results.write(sweep, study)


def tell(study: optuna.Study, trial, outcome: trial_runs.Outcome) -> None:
    if outcome.reason:
        trial.set_user_attr(REASON, outcome.reason)
    states = {FAIL: optuna.trial.TrialState.FAIL, PRUNED: optuna.trial.TrialState.PRUNED}
    if outcome.state in states:
        study.tell(trial, state=states[outcome.state])
    else:
        study.tell(trial, outcome.value)


def suggest(trial: optuna.trial.Trial, space: Space) -> dict:
    """The trial's value of each field, asked of Optuna (`suggest_*`); choices by their `label`."""
    values = {}
    for field, dim in space.items():
        if dim.choices is not None:
            labels = {label(choice): choice for choice in dim.choices}
            values[field] = labels[trial.suggest_categorical(field, list(labels))]
        elif dim.whole:
            values[field] = trial.suggest_int(field, dim.low, dim.high, step=dim.step or 1, log=dim.log)
        else:
            values[field] = trial.suggest_float(field, dim.low, dim.high, step=dim.step, log=dim.log)
    return values


def label(choice: object) -> object:
    """A choice as Optuna stores it: itself where Optuna takes it (a number, a string, a bool, None), else its text."""
    return choice if choice is None or isinstance(choice, bool | int | float | str) else repr(choice)


def by_program(sweep: Sweep, trials: list) -> dict[str, list]:
    """The trials grouped by their values of the fields that fix a program (text of those values: its trials)."""
    groups: dict[str, list] = {}
    for trial in trials:
        values = trial_runs.values_of(trial)
        fixed = {
            field: value for field, value in values.items() if not search_space.shares_program(sweep.config, field)
        }
        key = repr(sorted(fixed.items())) if sweep.parallel > 1 else str(trial.number)
        groups.setdefault(key, []).append(trial)
    return groups


def summary(sweep: Sweep, study: optuna.Study) -> str:
    """The line a finished sweep prints: its trials by state, and the best one."""
    states = [trial.state.name.lower() for trial in finished(study)]
    counts = ", ".join(f"{states.count(state)} {state}" for state in ("complete", "pruned", "fail") if state in states)
    line = f"done: {len(states)} trials ({counts})"
    if "complete" in states:
        best = study.best_trial
        line += f"; best: trial {best.number}, {sweep.metric} {best.value:.6g}, {trial_runs.values_of(best)}"
    return line + f"; results in {sweep.workdir}"


def any_finished(workdir: str) -> bool:
    """Whether the sweep in `workdir` (if any) has finished a trial."""
    path = os.path.join(workdir, "optuna.db")
    if not os.path.isfile(path):
        return False
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{os.path.abspath(path)}")
    return bool(finished(study))


def finished(study: optuna.Study) -> list:
    return [trial for trial in study.get_trials(deepcopy=False) if trial.state.is_finished()]


def running(study: optuna.Study) -> list:
    return [trial for trial in study.get_trials(deepcopy=False) if trial.state == optuna.trial.TrialState.RUNNING]


def left_running(study: optuna.Study) -> dict[str, list]:
    """The trials a sweep that is gone left running, by group, as `optuna.trial.Trial`s to go on with; this process
    takes them over."""
    groups: dict[str, list] = {}
    for frozen in running(study):
        attrs = frozen.user_attrs
        if GROUP in attrs and trial_runs.runner_gone(attrs[RUNNER], attrs.get(HEARTBEAT), GRACE_SECONDS):
            trial = optuna.trial.Trial(study, frozen._trial_id)  # The trial as asked, to report to and tell.
            trial.set_user_attr(RUNNER, trial_runs.runner_id())
            groups.setdefault(attrs[GROUP], []).append(trial)
    return groups


def open_study(sweep: Sweep) -> optuna.Study:
    """The sweep's study in `WORKDIR/optuna.db`, created or loaded; `ConfigError` if it holds another sweep."""
    os.makedirs(sweep.workdir, exist_ok=True)
    storage = f"sqlite:///{os.path.abspath(os.path.join(sweep.workdir, 'optuna.db'))}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        storage=storage,
        study_name=STUDY,
        direction=sweep.direction,
        sampler=make_sampler(sweep),
        pruner=make_pruner(sweep.pruner),
        load_if_exists=True,
    )
    described = {"config": sweep.config_path, "overrides": sweep.overrides, "space": sorted(sweep.space)}
    described["metric"] = sweep.metric
    saved = study.user_attrs
    if not saved:
        for name, value in described.items():
            study.set_user_attr(name, value)
    elif {name: saved.get(name) for name in described} != described:
        raise ConfigError(
            "--workdir",
            f"{sweep.workdir} holds another sweep ({saved})",
            "pass a new workdir, or the same config, overrides, space and metric to go on with it",
        )
    return study


def make_sampler(sweep: Sweep) -> optuna.samplers.BaseSampler:
    """Optuna's sampler, seeded by the config's seed; TPE assumes the trials under way score like the worst so far
    (its constant liar), so that trials asked together spread out."""
    seed = sweep.config.seed
    if sweep.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if sweep.sampler == "grid":
        grid = {field: [label(choice) for choice in dim.choices] for field, dim in sweep.space.items()}
        return WholeGrid(grid, seed=seed)
    with warnings.catch_warnings():  # constant_liar is marked experimental since Optuna 2.8.
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=seed, constant_liar=sweep.parallel > 1)


class WholeGrid(optuna.samplers.GridSampler):
    """Optuna's grid sampler, asked and told: its own `after_trial` stops `study.optimize` once the grid is
    covered, which outside that loop is an error; a sweep asks for no more trials than the grid has."""

    def after_trial(self, study, trial, state, values) -> None:
        pass


def grid_size(space: Space) -> int:
    return math.prod(len(dim.choices) for dim in space.values())


def make_pruner(name: str) -> optuna.pruners.BasePruner:
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=0)
    if name == "halving":
        return optuna.pruners.SuccessiveHalvingPruner()
    return optuna.pruners.NopPruner()
