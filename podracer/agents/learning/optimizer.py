"""Optimisers from `config.optimizer`, and the replicated gradient step the built-in agents learn with.

`sgd_step` is written per device, with the device axis as an argument: each
device differentiates the loss on its shard of the batch, gradients and
metrics are averaged over `axis_name` (`podracer.devices.collectives.mean`), and every
device applies the same optax update, so parameters stay identical. With
`axis_name=None` it is a plain gradient step on one device.

On CPU a big batch is differentiated in slices (`chunked_grad`): XLA:CPU runs
an MLP's forward and backward passes at the speed of memory once a layer's
activations outgrow the core's cache (65,536 rows x 64 units are 16 MB), and
at the speed of its matrix kernels while they fit.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from podracer.agents.models.network_settings import NetworkSettings
from podracer.devices import collectives

LossFn = Callable[[Any, Any], tuple[chex.Array, dict]]  # (params, batch) -> (loss, metrics).

# Rows (network inputs) per slice of a chunked gradient: 2,048 x 64 float32 activations are 512 KB, within the
# 1 MB L2 cache of a core of the 2-core CI machine. There, one XLA:CPU thread: PPO's learn on 2,048 x 128 CartPole
# transitions (16 minibatches of 65,536) takes 2.0 s whole and 1.2 s in slices of 512 to 2,048 rows; actor-critic
# on Catch at 1,024 x 16 runs at 0.68M steps/s whole, 0.89M in slices of 1,088 rows, 0.85M in slices of 2,176.
CHUNK_ROWS = 2048


@struct.dataclass
class LearnerState:
    params: Any
    opt_state: Any
    normalizers: Any = None  # Running statistics the agent keeps beside its parameters (`network_agent.Normalizers`).
    meta: Any = None  # What a meta-gradient agent learns beside them (`meta_gradient_rl.MetaState`).


# (schedule, eps, eps_root) -> optimiser. eps_root (inside Adam's square root) is 0 but for meta-gradients: the
# derivative of sqrt at 0 is infinite, so a parameter whose gradient is 0 would make them NaN. RMSProp's eps is
# inside its square root already.
OPTIMIZERS = {
    "adam": lambda schedule, eps, eps_root: optax.adam(schedule, eps=eps, eps_root=eps_root),
    "radam": lambda schedule, eps, eps_root: optax.radam(schedule, eps=eps, eps_root=eps_root),  # Liu et al. 2020.
    "rmsprop": lambda schedule, eps, eps_root: optax.rmsprop(schedule, decay=0.99, eps=eps),
    "sgd": lambda schedule, eps, eps_root: optax.sgd(schedule),
}


@dataclasses.dataclass(frozen=True)
class OptimizerSettings:
    """An optimiser's fields (`config.optimizer`, and LPG's `config.meta.optimizer`)."""

    name: str = "adam"  # One of OPTIMIZERS.
    learning_rate: float = 3e-4
    max_grad_norm: float = 0.5  # Gradients are clipped to this global norm first.
    eps: float = 1e-5  # Added to Adam's and RMSProp's denominators.
    anneal_lr: bool = False  # The rate decays linearly to 0 over the run's gradient steps.


def make_optimizer(
    settings: OptimizerSettings, gradient_steps: int, eps_root: float = 0.0
) -> optax.GradientTransformation:
    """Global-norm clipping, then `settings.name` (adam, radam, rmsprop or sgd).

    With `anneal_lr` the rate decays linearly to 0 over the run's
    `gradient_steps`. The parameters are flattened into one vector for the
    update (`optax.flatten`), which cuts the number of small kernels per step.
    `eps_root > 0` makes Adam's update differentiable where a gradient is 0,
    for meta-gradients through it (`podracer.agents.meta.meta_gradient`).
    """
    rate = settings.learning_rate
    schedule = optax.linear_schedule(rate, 0.0, gradient_steps) if settings.anneal_lr else rate
    return optax.flatten(
        optax.chain(
            optax.clip_by_global_norm(settings.max_grad_norm),
            OPTIMIZERS[settings.name](schedule, settings.eps, eps_root),
        )
    )


def slices_gradients(network: NetworkSettings) -> bool:
    """Whether a network's gradients are taken in slices on CPU (`chunked_grad`): feed-forward MLPs only, as
    XLA:CPU runs convolutions slowly inside loops, and a recurrent core's scan would run once per slice (PPO with
    a GRU on 2,048 CartPoles: 12.3 s an update whole, 14.9 s in slices, on the 2-core CI machine)."""
    return network.torso == "mlp" and network.core == "none"


def sgd_step(
    state: LearnerState,
    batch: Any,
    loss_fn: LossFn,
    optimizer: optax.GradientTransformation,
    axis_name,
    chunk_axis: int | None = None,
) -> tuple[LearnerState, dict]:
    """One gradient step with gradients and metrics averaged over `axis_name` (None: one device).

    With `chunk_axis`, along which `loss_fn` must be a mean (`chunked_grad`),
    the gradient is taken over slices of at most `CHUNK_ROWS` rows on CPU.
    The metrics gain `grad_norm`, the global norm of the averaged gradient
    before clipping: the number to watch when a run diverges.
    """
    grads, metrics = mean_gradient(loss_fn, state.params, batch, axis_name, chunk_axis)
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    metrics = {**metrics, "grad_norm": optax.tree.norm(flat_vector(grads))}
    return state.replace(params=optax.apply_updates(state.params, updates), opt_state=opt_state), metrics


def mean_gradient(
    loss_fn: LossFn, params: Any, batch: Any, axis_name, chunk_axis: int | None = None
) -> tuple[Any, dict]:
    """`(gradient, metrics)` of `loss_fn(params, batch)` averaged over `axis_name`, in slices along `chunk_axis` on CPU."""
    grad_fn = None if chunk_axis is None else chunked_grad(chunk_axis, num_chunks(batch, chunk_axis))
    return collectives.mean_grad(loss_fn, axis_name, grad_fn)(params, batch)


def flat_vector(tree: Any) -> chex.Array:
    """The leaves of `tree` as one vector, as `optax.flatten` concatenates them: the norm of the gradient in this form
    is the one the clipping computes, and XLA computes it once for both (64 steps of PQN on MinAtar: 3% faster)."""
    return jnp.concatenate([jnp.reshape(leaf, [-1]) for leaf in jax.tree.leaves(tree)])


def num_chunks(batch: Any, axis: int) -> int:
    """How many equal slices of `batch` along `axis` a gradient is taken over: the fewest of at most `CHUNK_ROWS`
    rows each, or one (the whole batch) where its size along `axis` splits only into slices under a quarter of that.

    A row is one network input: one per item along `axis` and every axis
    before it, so an observation `[T + 1, B, ...]` sliced along B has T + 1
    rows per environment.
    """
    size = jax.tree.leaves(batch)[0].shape[axis]
    rows = max(int(np.prod(leaf.shape[: axis + 1])) for leaf in jax.tree.leaves(batch))
    if rows <= CHUNK_ROWS:
        return 1
    chunks = next((n for n in range(2, size + 1) if size % n == 0 and rows <= n * CHUNK_ROWS), size)
    return chunks if rows // chunks >= CHUNK_ROWS // 4 else 1


def chunked_grad(axis: int, num_chunks: int) -> Callable[[LossFn], Callable[..., tuple[Any, Any]]]:
    """`jax.grad(loss_fn, has_aux=True)`, on CPU taken on `num_chunks` equal slices of the batch along `axis` in turn
    and averaged (gradient accumulation).

    The same gradient and metrics, up to float rounding, for a loss that is a
    mean over `axis` with no statistics pooled across it: the property that
    already makes averaging equal shards over devices exact. Each slice's
    forward and backward passes stay in cache. Other platforms differentiate
    the whole batch at once.
    """

    def make(loss_fn: LossFn) -> Callable[..., tuple[Any, Any]]:
        whole = jax.grad(loss_fn, has_aux=True)
        if num_chunks == 1:
            return whole

        def sliced(params: Any, batch: Any) -> tuple[Any, Any]:
            size = jax.tree.leaves(batch)[0].shape[axis] // num_chunks

            def one(index):
                chunk = jax.tree.map(lambda x: jax.lax.dynamic_slice_in_dim(x, index * size, size, axis), batch)
                return whole(params, chunk)

            return jax.tree.map(lambda x: jnp.mean(x, axis=0), jax.lax.map(one, jnp.arange(num_chunks)))

        return lambda params, batch: jax.lax.platform_dependent(params, batch, cpu=sliced, default=whole)

    return make


def key_data(key: chex.PRNGKey) -> chex.Array:
    """A key's data, uint32: a learner state of plain arrays compares, digests and saves like any other."""
    return jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
