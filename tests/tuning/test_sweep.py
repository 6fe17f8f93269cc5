"""`podracer sweep`: search spaces checked before any trial, trials as members of one program equal to their runs
alone, what a sweep writes, failures and pruning recorded, a killed sweep going on, and Sebulba's one at a time."""

import csv
import math
import os

import optuna
import pytest

import podracer
from podracer import cli
from podracer.config.errors import ConfigError, UsageError
from podracer.run.contract import LogEvent
from podracer.tuning import search_space, sweep, trial_runs
from tests.helpers import HANG_SECONDS, ROOT

CATCH = os.path.join(ROOT, "configs", "anakin_catch.py")
# Catch made small: 8 updates of 32 environments x 8 steps, 4 records.
SMALL = {"num_envs": "32", "unroll_length": "8", "total_steps": "2048", "log_records": "4"}
SMALL.update({"network.hidden_sizes": "(16,)", "max_dispatch_seconds": str(HANG_SECONDS)})
SPACE = "optimizer.learning_rate: {low: 1.0e-4, high: 1.0e-2, log: true}\nagent.entropy_cost: {low: 0.0, high: 0.05}\n"


def space_file(tmp_path, text: str = SPACE, name: str = "space.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def make_sweep(tmp_path, workdir="sweep", space=SPACE, config=CATCH, overrides=SMALL, **search) -> sweep.Sweep:
    search = {"trials": 4, "parallel": 2, "sampler": "random", **search}
    return sweep.prepare(config, overrides, space_file(tmp_path, space), str(tmp_path / workdir), **search)


def test_a_space_is_read_from_yaml_or_python_and_its_fields_are_classified(tmp_path):
    python = space_file(
        tmp_path, "SPACE = {'num_envs': {'choices': [16, 32]}, 'agent.gamma': {'low': 0.9, 'high': 0.99}}", "s.py"
    )
    space = search_space.read(python)
    assert space["num_envs"].choices == (16, 32) and not space["agent.gamma"].whole
    config = podracer.load_config(CATCH)
    assert not search_space.shares_program(config, "num_envs") and search_space.shares_program(config, "agent.gamma")
    yaml_space = search_space.read(space_file(tmp_path, "unroll_length: {low: 8, high: 64, log: true}\n"))
    assert yaml_space["unroll_length"].whole and yaml_space["unroll_length"].log


@pytest.mark.parametrize(
    "text, field, message",
    [
        ("optimizer.learnin_rate: {low: 0.001, high: 0.01}\n", "optimizer.learnin_rate", "learning_rate"),
        ("agent.gamma: {low: 0.9, high: 1.5}\n", "agent.gamma", "allows 1.5"),
        ("optimizer.learning_rate: {low: 0.0, high: 0.01, log: true}\n", "optimizer.learning_rate", "log scale"),
        ("agent.gamma: {low: 0.99, high: 0.9}\n", "agent.gamma", "not a range"),
        ("agent.gamma: 0.9\n", "agent.gamma", "gives it 0.9"),
        ("unroll_length: {choices: [8, 0]}\n", "unroll_length", "allows 0"),
    ],
)
def test_a_space_that_cannot_work_is_refused_naming_the_field_before_any_trial(tmp_path, text, field, message):
    with pytest.raises(ConfigError, match=message) as error:
        make_sweep(tmp_path, space=text)
    assert error.value.field.startswith(field.split(".")[0])
    assert not (tmp_path / "sweep").exists()


def test_the_command_exits_2_naming_what_is_wrong_and_leaves_no_workdir(tmp_path, capsys):
    argv = ["sweep", "--config", CATCH, "--trials", "2", "--workdir", str(tmp_path / "w")]
    assert cli.run([*argv, "--space", space_file(tmp_path, "agent.gama: {low: 0.9, high: 0.99}\n")]) == 2
    assert "agent.gama" in capsys.readouterr().err
    assert cli.run([*argv, "--space", space_file(tmp_path), "--parallel", "0"]) == 2
    assert not (tmp_path / "w").exists()


def test_sebulba_runs_one_trial_at_a_time_and_a_grid_needs_choices(tmp_path):
    sebulba = os.path.join(ROOT, "configs", "sebulba_cartpole_impala.py")
    with pytest.raises(UsageError, match="one trial at a time"):
        make_sweep(tmp_path, config=sebulba, overrides={}, parallel=2)
    with pytest.raises(ConfigError, match="needs choices"):
        make_sweep(tmp_path, sampler="grid")


def test_trials_group_into_one_population_by_the_fields_that_fix_their_program(tmp_path):
    setup = make_sweep(tmp_path, space=SPACE + "num_envs: {choices: [16, 32]}\n")
    values = [{"optimizer.learning_rate": 1e-3, "agent.entropy_cost": 0.01, "num_envs": n} for n in (16, 32, 16)]
    trials = [FakeTrial(number, v) for number, v in enumerate(values)]
    groups = list(sweep.by_program(setup, trials).values())
    assert [[trial.number for trial in group] for group in groups] == [[0, 2], [1]]
    config = trial_runs.group_config(setup.config, [values[0], values[2]])
    assert config.num_envs == 16 and config.population.seed == (0, 0) and not config.check_finite
    assert config.population.optimizer.learning_rate == (1e-3, 1e-3)
    alone = trial_runs.group_config(setup.config, [values[1]])
    assert alone.num_envs == 32 and alone.agent.entropy_cost == 0.01 and not population_of(alone)


def population_of(config) -> dict:
    from podracer.config import population

    return population.values(config)


class FakeTrial:
    """An `optuna.trial.Trial` stand-in: its number, values, the reports it got, and a scripted pruner."""

    def __init__(self, number, values=None, prune_from=math.inf):
        self.number, self.user_attrs, self.reports, self.prune_from = number, {"values": values or {}}, [], prune_from

    def report(self, value, step):
        self.reports.append((step, value))

    def should_prune(self):
        return len(self.reports) >= self.prune_from

    def set_user_attr(self, name, value):
        self.user_attrs[name] = value


def member(index, step, episode_return, loss=0.5):
    return {"step": step, "member": index, "episodes": 3, "mean_episode_return": episode_return, "loss": loss}


def test_the_watch_reports_each_member_prunes_fails_at_a_non_finite_loss_and_stops_a_group_with_none_left():
    trials = [FakeTrial(0), FakeTrial(1, prune_from=2)]
    watch = trial_runs.TrialWatch(trials, "mean_episode_return")
    watch(LogEvent({"step": 10, "members": [member(0, 10, 1.0), member(1, 10, 2.0)]}, None, 30))
    assert trials[0].reports == [(10, 1.0)] and trials[1].reports == [(10, 2.0)]
    with pytest.raises(trial_runs.GroupFinished):
        watch(LogEvent({"step": 20, "members": [member(0, 20, 1.0, math.nan), member(1, 20, 3.0)]}, None, 30))
    assert [outcome.state for outcome in watch.outcomes] == ["fail", "pruned"]
    assert "non-finite loss by step 20" in watch.outcomes[0].reason
    with pytest.raises(ConfigError, match=r"'loss', 'mean_episode_return'"):
        trial_runs.TrialWatch([FakeTrial(0)], "return")(
            LogEvent({"step": 1, "loss": 0.1, "mean_episode_return": 0.0}, None, 2)
        )


@pytest.mark.slow  # About 25 s: two sweeps of 3 Catch trials, and the trials alone.
def test_trials_in_one_program_score_as_alone_and_the_sweep_writes_its_storage_table_best_config_and_figure(tmp_path):
    together = sweep.run(make_sweep(tmp_path, "together", trials=3, parallel=3), podracer.train)
    alone = sweep.run(make_sweep(tmp_path, "alone", trials=3, parallel=1), podracer.train)
    assert (
        len(os.listdir(tmp_path / "together" / "trials")) == 1 and len(os.listdir(tmp_path / "alone" / "trials")) == 3
    )
    for shared, own in zip(together.trials, alone.trials, strict=True):
        assert shared.params == own.params  # The same seeded sampler asked in the same order.
        assert shared.value == pytest.approx(own.value, abs=0.05)  # Float rounding may flip a rare episode's catch.
        first_loss = [trial.intermediate_values for trial in (shared, own)]
        assert first_loss[0].keys() == first_loss[1].keys()
    workdir = tmp_path / "together"
    rows = list(csv.DictReader(open(workdir / "trials.csv")))
    assert [row["state"] for row in rows] == ["complete"] * 3 and {"optimizer.learning_rate", "group"} <= set(rows[0])
    assert (workdir / "sweep.png").stat().st_size > 0
    stored = optuna.load_study(study_name=sweep.STUDY, storage=f"sqlite:///{workdir / 'optuna.db'}")
    assert stored.best_trial.number == together.best_trial.number
    best = podracer.load_config(str(workdir / "best_config.py"))
    assert best.optimizer.learning_rate == together.best_trial.params["optimizer.learning_rate"]
    assert best.num_envs == 32  # The sweep's overrides come with it.


@pytest.mark.slow  # About 20 s.
def test_a_diverging_trial_fails_alone_and_a_killed_sweep_goes_on_with_the_trials_it_finished(tmp_path):
    """Trial 1's learning rate sends its loss to NaN; the sweep is killed in its second group, then started again."""
    space = "optimizer.learning_rate: {choices: [0.001, 1.0e+30]}\nagent.entropy_cost: {choices: [0.0, 0.01]}\n"
    setup = make_sweep(tmp_path, space=space, trials=4, parallel=2, sampler="grid")
    calls = []

    def killed_in_second_group(config, **kwargs):
        calls.append(kwargs["workdir"])
        if len(calls) == 2:
            raise KeyboardInterrupt  # As a kill would stop it: no trial told.
        return podracer.train(config, **kwargs)

    with pytest.raises(KeyboardInterrupt):
        sweep.run(setup, killed_in_second_group)
    study = sweep.run(setup, killed_in_second_group)
    assert len(calls) == 3 and calls[2] == calls[1]  # Only the killed group ran again, in its own workdir.
    assert len(study.trials) == 4 and all(trial.state.is_finished() for trial in study.trials)
    states = {trial_runs.values_of(trial)["optimizer.learning_rate"]: trial.state.name for trial in study.trials}
    assert states == {0.001: "COMPLETE", 1e30: "FAIL"}
    failed = [trial for trial in study.trials if trial.state.name == "FAIL"]
    assert all("non-finite" in trial.user_attrs["reason"] for trial in failed)


@pytest.mark.slow  # About 15 s: two small Sebulba runs.
def test_a_sebulba_sweep_runs_its_trials_one_after_another_from_the_command_line(tmp_path, capsys):
    sebulba = os.path.join(ROOT, "configs", "sebulba_cartpole_impala.py")
    small = {"envs_per_thread": "6", "unroll_length": "8", "total_steps": str(8 * 6 * 2 * 3), "log_every_updates": "1"}
    small.update({"stop_grace_seconds": str(HANG_SECONDS), "stall_timeout_seconds": str(HANG_SECONDS)})
    overrides = [f"--config.{field}={value}" for field, value in small.items()]
    argv = ["sweep", "--config", sebulba, *overrides, "--space", space_file(tmp_path), "--trials", "2"]
    assert cli.run([*argv, "--workdir", str(tmp_path / "w"), "--metric", "loss", "--direction", "minimize"]) == 0
    assert "done: 2 trials (2 complete)" in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path / "w" / "trials")) == ["trial_0000", "trial_0001"]
    rows = list(csv.DictReader(open(tmp_path / "w" / "trials.csv")))
    assert all(math.isfinite(float(row["value"])) for row in rows)


@pytest.mark.slow  # About 6 s: one Catch program compiled, to its first record.
def test_an_objective_the_run_does_not_log_exits_2_naming_those_it_does_and_leaves_no_workdir(tmp_path, capsys):
    overrides = [f"--config.{field}={value}" for field, value in SMALL.items()]
    argv = ["sweep", "--config", CATCH, *overrides, "--space", space_file(tmp_path), "--trials", "2", "--parallel", "2"]
    assert cli.run([*argv, "--workdir", str(tmp_path / "w"), "--metric", "episode_return"]) == 2
    error = capsys.readouterr().err
    assert "'episode_return' is not logged" in error and "'mean_episode_return'" in error
    assert not (tmp_path / "w").exists()


def test_a_sweeps_runs_are_grouped_in_wandb_under_its_folder_name(tmp_path):
    """With logger.wandb.project set, each group's run joins the wandb group named after the sweep's folder."""
    setup = make_sweep(tmp_path, "my_sweep", overrides={**SMALL, "logger.wandb.project": "tuning"}, trials=2)
    groups = []

    def recording_train(config, workdir, callbacks):
        groups.append(config.logger.wandb.group)
        records = [member(index, 2048, 0.5) for index in range(2)]
        return type("Result", (), {"history": [{"step": 2048, "members": records}]})

    study = sweep.run(setup, recording_train)
    assert groups == ["my_sweep"] and [trial.value for trial in study.trials] == [0.5, 0.5]


def test_values_the_config_refuses_together_fail_their_trials_without_a_run(tmp_path):
    setup = make_sweep(tmp_path)
    study = optuna.create_study()
    trial = study.ask()
    trial.set_user_attr("values", {"unroll_length": 0})  # Refused as the trial's config is checked.

    def no_run(config, **kwargs):
        raise AssertionError("a refused trial must not train")

    sweep.run_group(setup, study, "trial_0000", [trial], no_run)
    (told,) = study.trials
    assert told.state == optuna.trial.TrialState.FAIL and "unroll_length" in told.user_attrs["reason"]
