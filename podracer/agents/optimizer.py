"""Optimisers from `config.optimizer`, and the replicated gradient step the built-in agents learn with.

`sgd_step` is written per device, with the device axis as an argument: each
device differentiates the loss on its shard of the batch, gradients and
metrics are averaged over `axis_name` (`podracer.collectives.mean`), and every
device applies the same optax update, so parameters stay identical. With
`axis_name=None` it is a plain gradient step on one device.
"""

from collections.abc import Callable
from typing import Any

import chex
import optax
from flax import struct
from ml_collections import ConfigDict

from podracer import collectives

LossFn = Callable[[Any, Any], tuple[chex.Array, dict]]  # (params, batch) -> (loss, metrics).


@struct.dataclass
class LearnerState:
    params: Any
    opt_state: Any
    normalizers: Any = None  # Running statistics the agent keeps beside its parameters (`network_agent.Normalizers`).


OPTIMIZERS = {
    "adam": lambda schedule, eps: optax.adam(schedule, eps=eps),
    "rmsprop": lambda schedule, eps: optax.rmsprop(schedule, decay=0.99, eps=eps),
    "sgd": lambda schedule, eps: optax.sgd(schedule),
}


def make_optimizer(optimizer_config: ConfigDict, gradient_steps: int) -> optax.GradientTransformation:
    """Global-norm clipping, then `optimizer_config.name` (adam, rmsprop or sgd).

    With `anneal_lr` the rate decays linearly to 0 over the run's
    `gradient_steps`. The parameters are flattened into one vector for the
    update (`optax.flatten`), which cuts the number of small kernels per step.
    """
    rate = optimizer_config.learning_rate
    schedule = optax.linear_schedule(rate, 0.0, gradient_steps) if optimizer_config.anneal_lr else rate
    return optax.flatten(
        optax.chain(
            optax.clip_by_global_norm(optimizer_config.max_grad_norm),
            OPTIMIZERS[optimizer_config.name](schedule, optimizer_config.eps),
        )
    )


def sgd_step(
    state: LearnerState, batch: Any, loss_fn: LossFn, optimizer: optax.GradientTransformation, axis_name
) -> tuple[LearnerState, dict]:
    """One gradient step with gradients and metrics averaged over `axis_name` (None: one device).

    The metrics gain `grad_norm`, the global norm of the averaged gradient
    before clipping: the number to watch when a run diverges.
    """
    grads, metrics = collectives.mean_grad(loss_fn, axis_name)(state.params, batch)
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    metrics = {**metrics, "grad_norm": optax.tree.norm(grads)}
    return state.replace(params=optax.apply_updates(state.params, updates), opt_state=opt_state), metrics
