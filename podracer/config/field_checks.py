"""Checks of single config fields: types, ranges and choices, each failing with a `ConfigError` that says the fix.

Static validation (`podracer.experiment.schema.validate`, every agent's own `validate`,
each architecture's `settings.validate`) is written with these, so every
message has the same shape: the field, what is wrong with its value, and a
value that would work. Nothing here touches a device.
"""

import math
from collections.abc import Collection
from typing import Any

from ml_collections import ConfigDict

from podracer.config.errors import ConfigError

# The largest count, size or seed a field may hold: XLA indexes arrays, and envpool seeds environments, with int32.
INT32_MAX = 2**31 - 1
_FROM_DEFAULTS = "start the config from podracer.defaults(agent, architecture), which has every field"


def get(config: ConfigDict, field: str) -> Any:
    """The value at a dotted `field`, e.g. `"agent.gamma"`; `ConfigError` if the config lacks it."""
    value, parts = config, field.split(".")
    for depth, part in enumerate(parts):
        if not isinstance(value, ConfigDict):
            group = ".".join(parts[:depth])
            raise ConfigError(group, f"must be a group of fields, got {value!r}", _FROM_DEFAULTS)
        if part not in value:
            raise ConfigError(".".join(parts[: depth + 1]), "is missing from the config", _FROM_DEFAULTS)
        value = value[part]
    return value


def is_whole_number(value: Any, at_least: int, at_most: int | None = INT32_MAX) -> bool:
    """Whether `value` is an int (not a bool) in [at_least, at_most]. Environments check their options with it too."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= at_least
        and (at_most is None or value <= at_most)
    )


def matches_default_type(value: Any, default: Any) -> tuple[bool, str] | None:
    """`(ok, what is wanted)` for an option whose default is a bool, int, float or str; None for any other default.

    Environments check their options against their defaults' types with it (envpool and gymnax check none).
    """
    if isinstance(default, bool):
        return isinstance(value, bool), "True or False"
    if isinstance(default, int):
        return is_whole_number(value, -INT32_MAX - 1), "a whole number"
    if isinstance(default, float):
        return is_number(value), "a number"
    if isinstance(default, str):
        return isinstance(value, str), "a string"
    return None


def is_number(
    value: Any, at_least: float | None = None, above: float | None = None, at_most: float | None = None
) -> bool:
    """Whether `value` is a finite int or float (not a bool) within the bounds (`above` is exclusive)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (isinstance(value, int) or math.isfinite(value))  # An int is finite, and may be too big for a float.
        and (at_least is None or value >= at_least)
        and (above is None or value > above)
        and (at_most is None or value <= at_most)
    )


def choice(config: ConfigDict, field: str, choices: Collection) -> None:
    one_of(field, get(config, field), choices)


def one_of(field: str, value: Any, choices: Collection) -> None:
    """`ConfigError` naming `field` and the choices unless `value` is one of them."""
    try:
        known = value in choices and not isinstance(value, bool)  # A bool is no numbered choice (True == 1).
    except TypeError:  # Unhashable, such as a list: no choice either.
        known = False
    if not known:
        raise ConfigError(field, f"unknown value {value!r}", f"choose one of {sorted(choices)}")


def boolean(config: ConfigDict, field: str) -> None:
    value = get(config, field)
    if not isinstance(value, bool):
        raise ConfigError(field, f"must be True or False, got {value!r}", f"set --config.{field}=True or False")


def integer(
    config: ConfigDict, field: str, at_least: int, example: int | None = None, at_most: int | None = INT32_MAX
) -> None:
    """A whole number in [at_least, at_most] (`at_most=None`: no upper bound)."""
    value = get(config, field)
    if not is_whole_number(value, at_least, at_most):
        example = at_least if example is None else example
        raise ConfigError(
            field,
            f"must be a whole number {_bounds(at_least, at_most, [value])}, got {value!r}",
            f"set --config.{field}={example}",
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
    if not is_number(value, at_least, above, at_most):
        raise ConfigError(field, f"must be {wanted.strip()}, got {value!r}", f"set e.g. --config.{field}={example:g}")


def fraction(config: ConfigDict, field: str, example: float) -> None:
    """A number in [0, 1], such as a discount or a lambda."""
    number(config, field, example=example, at_least=0.0, at_most=1.0)


def integers(
    config: ConfigDict, field: str, *, at_least: int, example: str, non_empty: bool = True, distinct: bool = False
) -> None:
    """A tuple of whole numbers in [at_least, INT32_MAX]."""
    value = get(config, field)
    ok = isinstance(value, (tuple, list)) and all(is_whole_number(x, at_least) for x in value)
    if not ok or (non_empty and not value):
        what = "a non-empty tuple" if non_empty else "a tuple"
        entries = value if isinstance(value, (tuple, list)) else []
        raise ConfigError(
            field,
            f"must be {what} of whole numbers {_bounds(at_least, INT32_MAX, entries)}, got {value!r}",
            f'set e.g. --config.{field}="{example}"',
        )
    if distinct and len(set(value)) != len(value):
        raise ConfigError(field, f"{tuple(value)} repeats a value", f'list each value once, e.g. "{example}"')


def _bounds(at_least: int, at_most: int | None, values: list) -> str:
    """`>= a`, and `<= b` where b is the field's own bound or one of `values` passes the int32 limit."""
    over = any(is_whole_number(value, INT32_MAX + 1, None) for value in values)
    shown = at_most is not None and (at_most != INT32_MAX or over)
    return f">= {at_least}" + (f" and <= {at_most}" if shown else "")
