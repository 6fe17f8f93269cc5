"""What a sweep writes beside Optuna's storage, after each group of trials, each file whole.

- `trials.csv`: one row per trial: its number, state, objective, values,
  group, and why it failed or was pruned;
- `best_config.py`: the best trial as a config file that `podracer train`
  runs: the sweep's config file with its overrides and the trial's values;
- `sweep.png`: the objective against each searched field (matplotlib, the
  `plot` extra; left out where it is not installed).
"""

import csv
import importlib.util
import io
import math
import os
from typing import Any

import optuna

from podracer.run.metrics_writer import read_records
from podracer.run.whole_files import write_text
from podracer.tuning.trial_runs import GROUP, REASON, values_of

TRIALS_CSV, BEST_CONFIG, FIGURE = "trials.csv", "best_config.py", "sweep.png"


def write(sweep: Any, study: optuna.Study) -> None:
    """Writes the sweep's results so far (`podracer.tuning.sweep.Sweep`) into its workdir."""
    trials = study.get_trials(deepcopy=False)
    rows = table(trials, list(sweep.space))
    write_text(os.path.join(sweep.workdir, TRIALS_CSV), as_csv(rows))
    complete = [trial for trial in trials if trial.state == optuna.trial.TrialState.COMPLETE]
    if complete:
        write_text(os.path.join(sweep.workdir, BEST_CONFIG), best_config(sweep, study.best_trial))
    if rows and importlib.util.find_spec("matplotlib") is not None:
        from podracer.plot import save, tuning_figures

        log_fields = [field for field, dim in sweep.space.items() if dim.log]
        figure = tuning_figures.objective_against_fields(rows, list(sweep.space), sweep.metric, log_fields)
        save(figure, os.path.join(sweep.workdir, FIGURE))


def table(trials: list, fields: list[str]) -> list[dict]:
    """One row per trial: `trial`, `state`, `value`, each field's value (choices as text), `group` and `reason`."""
    rows = []
    for trial in trials:
        values = values_of(trial)
        row = {"trial": trial.number, "state": trial.state.name.lower(), "value": trial.value}
        row.update({field: _cell(values.get(field)) for field in fields})
        row.update({GROUP: trial.user_attrs.get(GROUP, ""), REASON: trial.user_attrs.get(REASON, "")})
        rows.append(row)
    return rows


def as_csv(rows: list[dict]) -> str:
    if not rows:
        return ""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def best_config(sweep: Any, trial: optuna.trial.FrozenTrial) -> str:
    """The text of a config file that is the sweep's config with the best trial's values."""
    base = os.path.relpath(os.path.abspath(sweep.config_path), os.path.abspath(sweep.workdir))
    values = {**sweep.overrides, **values_of(trial)}
    lines = "".join(f"    {field!r}: {value!r},\n" for field, value in values.items())
    return (
        f'"""The best trial of the sweep in {sweep.workdir}: trial {trial.number}, {sweep.metric} {trial.value:.6g} '
        f"({sweep.direction}d).\n\n"
        f"{sweep.config_path} with the sweep's overrides and the trial's values:\n"
        f"    podracer train --config {os.path.join(sweep.workdir, BEST_CONFIG)}\n"
        '"""\n\n'
        "import os\n\n"
        "import podracer\n\n"
        f"BASE = os.path.join(os.path.dirname(os.path.abspath(__file__)), {base!r})\n"
        f"VALUES = {{\n{lines}}}\n\n\n"
        "def get_config():\n"
        "    return podracer.load_config(BASE, VALUES)\n"
    )


def read_history(workdir: str) -> list[dict]:
    """The records a group's run wrote, for one stopped early; none if it stopped before its first."""
    path = os.path.join(workdir, "metrics.jsonl")
    return read_records(path) if os.path.isfile(path) else []


def _cell(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return repr(tuple(value))
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    return value
