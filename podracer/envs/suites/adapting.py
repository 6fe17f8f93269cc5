"""What every suite adapter does to a suite's objects to make them podracer's: checked hashable settings, typed states.

podracer's environments are frozen dataclasses that jitted functions close over
as static data, so their settings must be hashable (`hashable`: a config's
lists become tuples). A suite's reset often builds its state from Python
numbers (`time=0`), which a step then returns as typed arrays; `strongly_typed`
gives the reset state those types at once, so a state is the same pytree type
after reset and after any step: a stable `lax.scan` carry, and one that
`AutoReset` can select between. `check_settings` checks a task's keyword
arguments (`config.env.kwargs`) against its defaults before anything is built:
every suite's settings, the host suites' (envpool) too, are checked there, so
that each refusal names the setting and what it wants in the same words.
"""

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from podracer.config.field_checks import is_whole_number, matches_default_type

Settings = tuple[tuple[str, Any], ...]  # Sorted (name, value) pairs: hashable keyword arguments.
Check = tuple[Callable[[Any], bool], str]  # A setting's own rule: whether a value keeps it, and what it wants.


def hashable(value: Any) -> Any:
    """`value` with its lists (from a config) as tuples, nested ones too."""
    return tuple(hashable(v) for v in value) if isinstance(value, list | tuple) else value


def strongly_typed(state: Any) -> Any:
    """`state` with every leaf a typed array of the type it already has (PRNG keys as they are)."""

    def typed(leaf: Any) -> Any:
        if isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            return leaf
        return jnp.asarray(leaf, jnp.result_type(leaf))

    return jax.tree.map(typed, state)


def whole_number(at_least: int) -> Check:
    """The check of a setting that counts something (a time limit, a size): a whole number >= `at_least`."""
    return lambda value: is_whole_number(value, at_least), f"a whole number >= {at_least}"


def check_settings(
    suite: str,
    task: str,
    kwargs: Mapping[str, Any],
    defaults: Mapping[str, Any],
    counts: tuple[str, ...] = (),
    *,
    checks: Mapping[str, Check] | None = None,
    accepted: str | None = None,
    refuse_unknown: bool = True,
) -> Settings:
    """`kwargs` as hashable settings, once each is one of `defaults` with a value of its default's type.

    Raises `ValueError` naming the setting: an unknown one with what the task
    accepts (`accepted`, by default "it accepts" the names of `defaults`;
    `refuse_unknown=False` leaves unknown names to a suite that names them
    itself), an ill-typed one with the wanted type. `counts` name settings that
    must be whole numbers >= 1 (time limits, sizes); `checks` give settings a
    rule of their own instead of their default's type. Lists (from a config)
    become tuples.
    """
    unknown = sorted(set(kwargs) - set(defaults)) if refuse_unknown else []
    if unknown:
        accepted = f"it accepts {sorted(defaults)}" if accepted is None else accepted
        raise ValueError(f"{suite} {task} has no setting {', '.join(unknown)}: {accepted}")
    rules = {**{name: whole_number(1) for name in counts}, **(checks or {})}
    for name, value in kwargs.items():
        if name in rules:
            ok, wanted = rules[name][0](value), rules[name][1]
        elif (typed := matches_default_type(value, defaults.get(name))) is not None:
            ok, wanted = typed
        else:  # A default of another kind (a generator, a function, none): the suite checks it.
            continue
        if not ok:
            raise ValueError(f"{suite} {task}'s {name} must be {wanted}, got {value!r}.")
    return tuple(sorted((name, hashable(value)) for name, value in kwargs.items()))
