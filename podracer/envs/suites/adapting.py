"""What every suite adapter does to a suite's objects to make them podracer's: checked hashable settings, typed states.

podracer's environments are frozen dataclasses that jitted functions close over
as static data, so their settings must be hashable (`hashable`: a config's
lists become tuples). A suite's reset often builds its state from Python
numbers (`time=0`), which a step then returns as typed arrays; `strongly_typed`
gives the reset state those types at once, so a state is the same pytree type
after reset and after any step: a stable `lax.scan` carry, and one that
`AutoReset` can select between. `check_settings` checks a task's keyword
arguments (`config.env.kwargs`) against its defaults before anything is built.
"""

from typing import Any

import jax
import jax.numpy as jnp

from podracer.config.field_checks import is_whole_number, matches_default_type

Settings = tuple[tuple[str, Any], ...]  # Sorted (name, value) pairs: hashable keyword arguments.


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


def check_settings(
    suite: str, task: str, kwargs: dict[str, Any], defaults: dict[str, Any], counts: tuple[str, ...] = ()
) -> Settings:
    """`kwargs` as hashable settings, once each is one of `defaults` with a value of its default's type.

    Raises `ValueError` naming the accepted names for an unknown keyword, and
    the wanted type for an ill-typed value; `counts` name settings that must be
    whole numbers >= 1 (time limits, sizes). Lists (from a config) become tuples.
    """
    unknown = sorted(set(kwargs) - set(defaults))
    if unknown:
        raise ValueError(f"{suite} {task} has no setting {', '.join(unknown)}: it accepts {sorted(defaults)}")
    settings = {name: hashable(value) for name, value in kwargs.items()}
    for name, value in settings.items():
        if name in counts:
            ok, wanted = is_whole_number(value, 1), "a whole number >= 1"
        elif (typed := matches_default_type(value, defaults[name])) is not None:
            ok, wanted = typed
        else:  # A default of another kind (a generator, a function): the suite checks it.
            continue
        if not ok:
            raise ValueError(f"{suite} {task}'s {name} must be {wanted}, got {value!r}.")
    return tuple(sorted(settings.items()))
