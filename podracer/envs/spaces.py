"""Gymnasium spaces as dm_env specs, and the action checks, shared by the host environments (envpool, Gymnasium).

Both suites describe one environment with Gymnasium spaces (envpool's
gymnasium API returns `gymnasium.spaces` too), so one translation serves both:

- observations: a Box becomes a `BoundedArray` with the Box's shape, dtype and
  bounds (a scalar bound where all are equal); a Dict becomes a dict of specs;
- actions: `Discrete(n)` (starting at 0) becomes a `DiscreteArray` of int32,
  a floating-point Box a `BoundedArray` of float32 with its shape and bounds.
  The actors clip continuous actions to those bounds before stepping, so
  `check_actions` checks shape, dtype and finiteness, not bounds.

Spaces are recognised by class name, so this module does not import
Gymnasium (a second of start-up) for environments that never need it.
"""

from typing import Any

import numpy as np
from dm_env import specs

ActionSpec = specs.DiscreteArray | specs.BoundedArray


def array_spec(space: Any, name: str, *, float32: bool = False) -> Any:
    """The dm_env spec of one environment's Box (or nested Dict of Boxes) space; float64 leaves as float32 if asked."""
    kind = type(space).__name__
    if kind == "Dict":
        return {key: array_spec(sub, key, float32=float32) for key, sub in space.spaces.items()}
    if kind != "Box":
        raise ValueError(
            f"Only Box and Dict observation spaces are supported, got {space}; "
            "wrap the environment to observe arrays (e.g. gymnasium.wrappers.FlattenObservation)."
        )
    dtype = np.dtype(space.dtype)
    if float32 and dtype == np.float64:
        dtype = np.dtype(np.float32)
    return specs.BoundedArray(tuple(space.shape), dtype, *_bounds(space), name=name)


def cast(tree: Any, spec: Any, xp: Any = np) -> Any:
    """`tree` (arrays, or nested dicts of them) with every leaf in its spec's dtype; copies only leaves that change.

    `xp` is the array module: `numpy` on the host, `jax.numpy` inside a compiled program.
    """
    if isinstance(spec, dict):
        return {key: cast(tree[key], sub, xp) for key, sub in spec.items()}
    return xp.asarray(tree, dtype=spec.dtype)


def action_spec(space: Any) -> ActionSpec:
    """The dm_env spec of one environment's actions: `Discrete(n)` from 0, or a floating-point Box."""
    kind = type(space).__name__
    if kind == "Discrete" and int(getattr(space, "start", 0)) == 0:
        return specs.DiscreteArray(int(space.n), dtype=np.int32, name="action")
    if kind == "Box" and np.issubdtype(space.dtype, np.floating):
        return specs.BoundedArray(tuple(space.shape), np.float32, *_bounds(space), name="action")
    raise ValueError(
        f"Only discrete actions 0..n-1 (Discrete) and continuous ones (a floating-point Box) are supported, got {space}."
    )


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


def _bounds(space: Any) -> tuple[Any, Any]:
    """A Box's (low, high): scalars where every element shares the bound, arrays otherwise."""
    low, high = np.asarray(space.low), np.asarray(space.high)
    minimum = low.flat[0] if low.size and (low == low.flat[0]).all() else low
    maximum = high.flat[0] if high.size and (high == high.flat[0]).all() else high
    return minimum, maximum
