"""The replicated gradient step every agent's `learn` is built from.

`sgd_step` runs inside a per-device program (`jax.shard_map` over
`DEVICE_AXIS`): each device differentiates the loss on its shard of the batch,
gradients and metrics are averaged across devices with `lax.pmean`, and every
device applies the same optax update, so parameters stay identical.
"""

from typing import Any, Callable

import chex
import jax
import optax
from flax import struct

from podracer.topology import DEVICE_AXIS, mean_over_devices

LossFn = Callable[[Any, Any], tuple[chex.Array, dict]]  # (params, batch) -> (loss, metrics).


@struct.dataclass
class LearnerState:
    params: Any
    opt_state: Any


OPTIMIZERS = {
    "adam": lambda schedule, eps: optax.adam(schedule, eps=eps),
    "rmsprop": lambda schedule, eps: optax.rmsprop(schedule, decay=0.99, eps=eps),
    "sgd": lambda schedule, eps: optax.sgd(schedule),
}


def make_optimizer(
    name: str, learning_rate: float, max_grad_norm: float, eps: float, anneal_steps: int = 0
) -> optax.GradientTransformation:
    """Global-norm clipping, then `name` (adam, rmsprop or sgd).

    The rate decays linearly to 0 over `anneal_steps` gradient steps if > 0. The
    parameters are flattened into one vector for the update (`optax.flatten`),
    which cuts the number of small kernels per step.
    """
    schedule = optax.linear_schedule(learning_rate, 0.0, anneal_steps) if anneal_steps > 0 else learning_rate
    return optax.flatten(optax.chain(optax.clip_by_global_norm(max_grad_norm), OPTIMIZERS[name](schedule, eps)))


def sgd_step(
    state: LearnerState, batch: Any, loss_fn: LossFn, optimizer: optax.GradientTransformation
) -> tuple[LearnerState, dict]:
    """One gradient step with gradients averaged over every device of the mesh axis.

    The parameters are first marked as varying per device (`pcast`), so `grad`
    returns this device's own gradient (pmap semantics) rather than the sum over
    devices that shard_map's transpose of a replicated input would produce; the
    explicit average follows.
    """
    local_params = jax.lax.pcast(state.params, DEVICE_AXIS, to="varying")
    grads, metrics = jax.grad(loss_fn, has_aux=True)(local_params, batch)
    grads, metrics = mean_over_devices((grads, metrics))
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    return LearnerState(optax.apply_updates(state.params, updates), opt_state), metrics
