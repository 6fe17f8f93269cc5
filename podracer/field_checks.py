"""Checks of single config fields: types, ranges and choices, each failing with a `ConfigError` that says the fix.

Static validation (`podracer.config.validate`, every agent's own `validate`,
each architecture's `settings.validate`) is written with these, so every
message has the same shape: the field, what is wrong with its value, and a
value that would work. Nothing here touches a device.
"""

import math
from collections.abc import Collection
from typing import Any

from ml_collections import ConfigDict

from podracer.errors import ConfigError


def get(config: ConfigDict, field: str) -> Any:
    """The value at a dotted `field`, e.g. `"agent.gamma"`."""
    value = config
    for part in field.split("."):
        value = value[part]
    return value


def choice(config: ConfigDict, field: str, choices: Collection) -> None:
    value = get(config, field)
    if value not in choices:
        raise ConfigError(field, f"unknown value {value!r}", f"choose one of {sorted(choices)}")


def boolean(config: ConfigDict, field: str) -> None:
    value = get(config, field)
    if not isinstance(value, bool):
        raise ConfigError(field, f"must be True or False, got {value!r}", f"set --config.{field}=True or False")


def integer(config: ConfigDict, field: str, at_least: int, example: int | None = None) -> None:
    """A whole number >= `at_least`."""
    value = get(config, field)
    if isinstance(value, bool) or not isinstance(value, int) or value < at_least:
        example = at_least if example is None else example
        raise ConfigError(
            field, f"must be a whole number >= {at_least}, got {value!r}", f"set --config.{field}={example}"
        )


def number(
    config: ConfigDict,
    field: str,
    *,
    example: float,
    at_least: float | None = None,
    above: float | None = None,
    at_most: float | None = None,
) -> None:
    """A finite number within the given bounds (`above` is exclusive, the others inclusive)."""
    value = get(config, field)
    bounds = [
        f">= {at_least:g}" if at_least is not None else "",
        f"> {above:g}" if above is not None else "",
        f"<= {at_most:g}" if at_most is not None else "",
    ]
    wanted = "a number " + " and ".join(bound for bound in bounds if bound)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or (at_least is not None and value < at_least)
        or (above is not None and value <= above)
        or (at_most is not None and value > at_most)
    ):
        raise ConfigError(field, f"must be {wanted.strip()}, got {value!r}", f"set e.g. --config.{field}={example:g}")


def fraction(config: ConfigDict, field: str, example: float) -> None:
    """A number in [0, 1], such as a discount or a lambda."""
    number(config, field, example=example, at_least=0.0, at_most=1.0)


def integers(
    config: ConfigDict, field: str, *, at_least: int, example: str, non_empty: bool = True, distinct: bool = False
) -> None:
    """A tuple of whole numbers >= `at_least`."""
    value = get(config, field)
    ok = isinstance(value, (tuple, list)) and all(
        isinstance(x, int) and not isinstance(x, bool) and x >= at_least for x in value
    )
    if not ok or (non_empty and not value):
        what = "a non-empty tuple" if non_empty else "a tuple"
        raise ConfigError(
            field,
            f"must be {what} of whole numbers >= {at_least}, got {value!r}",
            f'set e.g. --config.{field}="{example}"',
        )
    if distinct and len(set(value)) != len(value):
        raise ConfigError(field, f"{tuple(value)} repeats a value", f'list each value once, e.g. "{example}"')
