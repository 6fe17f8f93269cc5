"""Spaces as dm_env specs, for every suite podracer adapts, and the host environments' action checks.

`space_to_spec` is the one translation. Spaces are recognised by their
attributes, so that gymnax's, Craftax's, JaxMARL's, stoa's and Gymnasium's
classes (envpool's gymnasium API returns Gymnasium's) convert alike, and this
module imports none of those packages (Gymnasium alone takes a second):

- a dict of `spaces` (Dict, stoa's DictSpace) becomes a dict of specs, by key
  in sorted order (the order `jax.tree` gives a dict);
- one whole number in [0, n) (`Discrete(n)` with `n` or stoa's `num_values`,
  and a shape of ()) becomes an int32 `DiscreteArray`; Gymnasium's
  `Discrete(n, start)` only where it starts at 0;
- bounds (a Box's `low` and `high`, a stoa BoundedArraySpace's or
  MultiDiscreteSpace's `minimum` and `maximum`) give a `BoundedArray` with
  the space's shape and dtype, each bound a scalar where all its elements are
  equal and an array otherwise;
- a shape and dtype without bounds (stoa's ArraySpace) give an `Array`.

Some suites' spaces declare another shape or dtype than the values they
return (gymnax's Catch-bsuite says int32 for float32 boards); `like`, the
shapes and dtypes of real values, overrides the space's. A discrete space
whose values are not integer scalars is then a `BoundedArray` in [0, n - 1].

The host environments (envpool, Gymnasium, PettingZoo) accept less:
observations of Boxes (or Dicts of them), and actions in `Discrete(n)` from 0
or a floating-point Box as float32. The actors clip continuous actions to
the spec's bounds before stepping, so `check_actions` checks shape, dtype and
finiteness, not bounds.
"""

from collections.abc import Mapping
from typing import Any

import numpy as np
from dm_env import specs

ActionSpec = specs.DiscreteArray | specs.BoundedArray


def space_to_spec(space: Any, name: str, *, like: Any = None, float32: bool = False) -> Any:
    """The dm_env spec of `space` (see the module's docstring), named `name`, a dict's entries by their keys.

    `like` (a nest of arrays or `jax.ShapeDtypeStruct`s matching the space)
    gives the shapes and dtypes; `float32` makes floating-point leaves float32
    (Gymnasium's float64 Boxes: JAX computes in float32). Raises
    `NotImplementedError` for a space of any other kind.
    """
    subspaces = getattr(space, "spaces", None)
    if isinstance(subspaces, Mapping):
        return {
            key: space_to_spec(subspaces[key], key, like=None if like is None else like[key], float32=float32)
            for key in sorted(subspaces)
        }
    count = _discrete_count(space)
    if count is None and getattr(space, "shape", None) is None:
        raise NotImplementedError(f"podracer cannot convert the {type(space).__name__} space {space!r} to a spec.")
    if like is not None:
        shape, dtype = tuple(like.shape), np.dtype(like.dtype)
    elif count is not None:
        shape, dtype = (), np.dtype(np.int32)
    else:
        shape, dtype = tuple(space.shape), np.dtype(space.dtype)
    if float32 and np.issubdtype(dtype, np.floating):
        dtype = np.dtype(np.float32)
    if count is not None and shape == () and np.issubdtype(dtype, np.integer):
        return specs.DiscreteArray(count, dtype=dtype, name=name)
    bounds = (0, count - 1) if count is not None else _bounds(space)
    if bounds is None:
        return specs.Array(shape, dtype, name=name)
    minimum, maximum = (_compact(np.asarray(bound).astype(dtype)) for bound in bounds)
    return specs.BoundedArray(shape, dtype, minimum, maximum, name=name)


def array_spec(space: Any, name: str, *, float32: bool = False) -> Any:
    """The spec of a host environment's observations: a Box, or a nested Dict of Boxes; `ValueError` for others.

    The host actors batch arrays; a Discrete observation, say, is refused
    with the wrapper that makes it one.
    """
    spec = _converted(space, name, float32)
    if spec is None or not _only_boxes(spec):
        raise ValueError(
            f"Only Box and Dict observation spaces are supported, got {space}; "
            "wrap the environment to observe arrays (e.g. gymnasium.wrappers.FlattenObservation)."
        )
    return spec


def action_spec(space: Any) -> ActionSpec:
    """The spec of a host environment's actions: `Discrete(n)` from 0, or a floating-point Box as float32.

    These are the two kinds `check_actions` checks; `ValueError` for others.
    """
    spec = _converted(space, "action", float32=True)
    if isinstance(spec, specs.DiscreteArray) or (type(spec) is specs.BoundedArray and spec.dtype == np.float32):
        return spec
    raise ValueError(
        f"Only discrete actions 0..n-1 (Discrete) and continuous ones (a floating-point Box) are supported, got {space}."
    )


def cast(tree: Any, spec: Any, xp: Any = np) -> Any:
    """`tree` (arrays, or nested dicts of them) with every leaf in its spec's dtype; copies only leaves that change.

    `xp` is the array module: `numpy` on the host, `jax.numpy` inside a compiled program.
    """
    if isinstance(spec, dict):
        return {key: cast(tree[key], sub, xp) for key, sub in spec.items()}
    return xp.asarray(tree, dtype=spec.dtype)


def check_actions(action: Any, spec: ActionSpec, num_envs: int) -> np.ndarray:
    """`action` as an array of `num_envs` valid actions for `spec`; `ValueError` saying what is wrong otherwise.

    Discrete: integers of shape `[B]` within `[0, num_values)`. Continuous:
    floats of shape `[B, *spec.shape]`, all finite (NaN would go on to poison
    the simulation). Bounds are the caller's business: it clips.
    """
    action = np.asarray(action)
    if isinstance(spec, specs.DiscreteArray):
        if action.shape != (num_envs,) or not np.issubdtype(action.dtype, np.integer):
            raise ValueError(f"Expected integer actions of shape ({num_envs},), got {action.dtype} {action.shape}.")
        if action.min() < 0 or action.max() >= spec.num_values:
            raise ValueError(f"Actions must lie in [0, {spec.num_values}); got {action}.")
        return action
    shape = (num_envs, *spec.shape)
    if action.shape != shape or not np.issubdtype(action.dtype, np.floating):
        raise ValueError(f"Expected float actions of shape {shape}, got {action.dtype} {action.shape}.")
    if not np.isfinite(action).all():
        raise ValueError(f"Actions must be finite; got NaN or infinity in {action}.")
    return action


def _discrete_count(space: Any) -> int | None:
    """`n` of a space of one whole number in [0, n): `Discrete(n)` (`n`), stoa's DiscreteSpace (`num_values`).

    Raises `NotImplementedError` for Gymnasium's `Discrete(n, start)` with a start other than 0.
    """
    count = getattr(space, "n", getattr(space, "num_values", None))
    if count is None or tuple(getattr(space, "shape", None) or ()) != () or np.ndim(count) != 0:
        return None
    start = int(getattr(space, "start", 0))
    if start != 0:
        raise NotImplementedError(f"podracer cannot convert {space!r} to a spec: its values start at {start}, not 0.")
    return int(count)


def _bounds(space: Any) -> tuple[Any, Any] | None:
    """A space's (lowest, highest) values: a Box's `low` and `high`, stoa's `minimum` and `maximum`; None if none."""
    for low, high in (("low", "high"), ("minimum", "maximum")):
        if hasattr(space, low) and hasattr(space, high):
            return getattr(space, low), getattr(space, high)
    return None


def _compact(bound: np.ndarray) -> Any:
    """A bound as a scalar where every element shares it, as the array otherwise."""
    return bound.flat[0] if bound.size and (bound == bound.flat[0]).all() else bound


def _converted(space: Any, name: str, float32: bool) -> Any:
    """`space_to_spec`, or None for a space it cannot convert (the host's own message says what it accepts)."""
    try:
        return space_to_spec(space, name, float32=float32)
    except NotImplementedError:
        return None


def _only_boxes(spec: Any) -> bool:
    """Whether every leaf of `spec` is a Box's: a `BoundedArray`, neither discrete nor unbounded."""
    if isinstance(spec, dict):
        return all(_only_boxes(sub) for sub in spec.values())
    return type(spec) is specs.BoundedArray
