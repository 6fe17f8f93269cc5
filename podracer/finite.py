"""Stopping a run at the first non-finite loss, gradient or parameter, naming the update and what went wrong.

A diverging run would otherwise go on training NaNs for hours and checkpoint
them. Both architectures check every update: the agent's metrics (the loss,
and `grad_norm` for the built-in agents, so a non-finite gradient is named as
such) on the host, where they are fetched anyway, and the learner state on the
device, as one flag per leaf (`leaf_flags`), a cheap reduction next to an
update. `check` raises `NonFiniteError` before the state of that update can be
checkpointed, so the last good checkpoint is the newest one.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


class NonFiniteError(RuntimeError):
    """An update produced a non-finite metric or learner state; the run stopped without saving it."""


def leaf_flags(tree: Any) -> dict[str, jax.Array]:
    """`{leaf path: whether every value is finite}` for each floating-point leaf of `tree` (computed on device)."""
    return {
        jax.tree_util.keystr(path): jnp.all(jnp.isfinite(leaf))
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree)
        if jnp.issubdtype(leaf.dtype, jnp.inexact)
    }


def check(first_update: int, metrics: dict[str, np.ndarray], flags: dict[str, np.ndarray]) -> None:
    """Raises `NonFiniteError` for the first of a run of updates with a non-finite metric or state leaf.

    `metrics` and `flags` (from `leaf_flags`) hold one value per update along
    their first axis, for updates `first_update`, `first_update + 1`, ...
    """
    finite_metrics = {name: np.isfinite(value).reshape(len(value), -1).all(axis=1) for name, value in metrics.items()}
    count = len(next(iter({**finite_metrics, **flags}.values()), ()))
    for index in range(count):
        metric_names = [name for name, finite in finite_metrics.items() if not finite[index]]
        leaves = [path for path, finite in flags.items() if not finite[index]]
        if not (metric_names or leaves):
            continue
        what = [f"{name}={_first_non_finite(metrics[name][index])}" for name in metric_names]
        if leaves:
            shown = ", ".join(leaves[:3]) + (f" and {len(leaves) - 3} more leaves" if len(leaves) > 3 else "")
            what.append(f"learner state at {shown}")
        raise NonFiniteError(
            f"update {first_update + index} produced non-finite values: {'; '.join(what)}. Nothing from it was "
            "checkpointed; lower optimizer.learning_rate or optimizer.max_grad_norm, or look for a division by "
            "zero or a log of zero in the loss"
        )


def _first_non_finite(value: np.ndarray) -> float:
    value = np.ravel(value)
    return float(value[~np.isfinite(value)][0])
