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

from podracer.topology import mean_over_devices

LossFn = Callable[[Any, Any], tuple[chex.Array, dict]]  # (params, batch) -> (loss, metrics).


@struct.dataclass
class LearnerState:
    params: Any
    opt_state: Any


def make_optimizer(
    learning_rate: float, max_grad_norm: float, adam_eps: float, anneal_steps: int = 0
) -> optax.GradientTransformation:
    """Adam with global-norm clipping; the rate decays linearly to 0 over `anneal_steps` if > 0."""
    schedule = optax.linear_schedule(learning_rate, 0.0, anneal_steps) if anneal_steps > 0 else learning_rate
    return optax.flatten(optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(schedule, eps=adam_eps)))


def sgd_step(
    state: LearnerState, batch: Any, loss_fn: LossFn, optimizer: optax.GradientTransformation
) -> tuple[LearnerState, dict]:
    """One gradient step with gradients averaged over every device of the mesh axis."""
    grads, metrics = jax.grad(loss_fn, has_aux=True)(state.params, batch)
    grads, metrics = mean_over_devices((grads, metrics))
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    return LearnerState(optax.apply_updates(state.params, updates), opt_state), metrics
