"""A sweep's search space: the config fields it searches, each a range or a list of choices, read from a file.

A space is a YAML file, or a Python file defining `SPACE`, mapping dotted
config fields to what a trial may take:

    optimizer.learning_rate: {low: 1.0e-5, high: 1.0e-2, log: true}
    agent.entropy_cost: {low: 0.0, high: 0.05}
    agent.gae_lambda: {low: 0.8, high: 0.99, step: 0.01}
    unroll_length: {low: 16, high: 128, log: true}        # whole numbers: Optuna's suggest_int
    network.hidden_sizes: {choices: [[64, 64], [256, 256]]}

Each field must be one the config has, and every range's ends and every
choice must be a value the config accepts there; both are checked before any
trial starts, each refusal a `ConfigError` naming the field. Fields that
members of one Anakin program may differ in (real-valued `agent` and
`optimizer` fields, `podracer.config.population.can_vary`) vary within a
program; the others change shapes or choices, so each of their values is a
program of its own (`shares_program`).
"""

import dataclasses
import os
import runpy
from collections.abc import Callable
from typing import Any

import yaml
from ml_collections import ConfigDict

from podracer.config import field_checks, loading, population
from podracer.config.errors import ConfigError

SPACE = "SPACE"  # What a Python space file defines.
KEYS = {"low", "high", "log", "step", "choices"}


@dataclasses.dataclass(frozen=True)
class Dimension:
    """One searched field: a range (`low` to `high`, on a log scale or in `step`s) or a list of `choices`."""

    field: str
    low: float | int | None = None
    high: float | int | None = None
    log: bool = False
    step: float | int | None = None
    choices: tuple | None = None

    @property
    def whole(self) -> bool:
        """Whether the range holds whole numbers (both ends are ints): Optuna's `suggest_int`."""
        return isinstance(self.low, int) and isinstance(self.high, int)

    def values_to_check(self) -> tuple:
        """The values that bound what a trial may take: the range's ends, or every choice."""
        return self.choices if self.choices is not None else (self.low, self.high)


Space = dict[str, Dimension]


def read(path: str) -> Space:
    """The space of the YAML or Python file `path`; `ConfigError` (field `--space`) for a file that says no space."""
    if not os.path.isfile(path):
        raise ConfigError("--space", f"no file {path!r}", "pass a YAML or Python file of fields and their ranges")
    if path.endswith(".py"):
        fields = runpy.run_path(path).get(SPACE)
    else:
        with open(path) as f:
            fields = yaml.safe_load(f)
    if not isinstance(fields, dict) or not fields:
        what = f"{path} defines no {SPACE}" if path.endswith(".py") else f"{path} holds no mapping of fields"
        raise ConfigError("--space", what, "map each dotted config field to {low: ..., high: ...} or {choices: [...]}")
    return {field: dimension(field, spec) for field, spec in fields.items()}


def dimension(field: str, spec: Any) -> Dimension:
    """The dimension `spec` describes (a mapping of `KEYS`), or a `ConfigError` naming the field."""
    example = "{low: 1.0e-4, high: 1.0e-2, log: true} or {choices: [a, b]}"
    if not isinstance(spec, dict) or not spec or set(spec) - KEYS:
        raise ConfigError(field, f"the search space gives it {spec!r}", f"give {example}")
    if "choices" in spec:
        choices = spec["choices"]
        if set(spec) != {"choices"} or not isinstance(choices, list | tuple) or not choices:
            raise ConfigError(field, f"lists {spec!r}", "give a non-empty list of choices, and nothing beside it")
        return Dimension(field, choices=tuple(tuple(c) if isinstance(c, list) else c for c in choices))
    low, high = spec.get("low"), spec.get("high")
    if not (field_checks.is_number(low) and field_checks.is_number(high) and low < high):
        raise ConfigError(field, f"the range {low!r} to {high!r} is not a range", f"give {example} with low < high")
    if spec.get("log") and low <= 0:
        raise ConfigError(field, f"a log scale needs low > 0, got {low!r}", "raise low, or drop log")
    return Dimension(field, low, high, bool(spec.get("log", False)), spec.get("step"))


def validate(space: Space, config: ConfigDict, validate_config: Callable[[ConfigDict], None]) -> None:
    """Raises `ConfigError` naming the field where the config has no such field or refuses a value the space allows."""
    for field, dim in space.items():
        for value in dim.values_to_check():
            trial_config = with_values(config, {field: value})
            try:
                validate_config(trial_config)
            except ConfigError as error:
                raise ConfigError(
                    field,
                    f"the search space allows {value!r}, which the config refuses ({error})",
                    f"keep the range within what {field} accepts",
                ) from None


def with_values(config: ConfigDict, values: dict[str, Any]) -> ConfigDict:
    """A copy of `config` with each dotted field of `values` set, as a config file's override would
    (`ConfigError` for an unknown field or a value of the wrong type)."""
    copy = config.copy_and_resolve_references()
    with copy.unlocked():
        for field, value in values.items():
            if population.can_vary(config, field) and isinstance(value, int):
                value = float(value)
            loading.override(copy, field, value, source="the search space")
    return copy


def shares_program(config: ConfigDict, field: str) -> bool:
    """Whether Anakin trials differing in `field` can be members of one program."""
    return config.architecture == "anakin" and population.can_vary(config, field)


def describe(space: Space, config: ConfigDict, parallel: int) -> str:
    """The line a sweep starts with: which fields vary within a program and which start programs of their own."""
    shared = [field for field in space if shares_program(config, field)]
    own = [field for field in space if not shares_program(config, field)]
    parts = []
    if shared and parallel > 1:
        parts.append(f"{', '.join(shared)} vary within one program ({parallel} trials a program)")
    elif shared:
        parts.append(f"{', '.join(shared)} vary between trials run one at a time")
    if own:
        parts.append(f"{', '.join(own)} fix shapes or choices: each value is a program of its own")
    return "podracer sweep: " + "; ".join(parts)
