"""Meta-gradients through an agent's update: d(outer objective)/d(meta-parameters) through K inner updates.

An update rule with meta-parameters eta (hyperparameters, or a meta-network's
weights) moves the inner state (an agent's parameters and optimiser state):

    theta_{k+1} = theta_k + f(tau_k, theta_k, eta)       (Xu et al. 2018, "Meta-Gradient RL", eq. 1)

and an outer objective J' judges the result on other data tau'. The
meta-gradient is the chain rule through the K updates (ibid., eq. 2):

    dJ'(tau', theta_K, eta) / d eta = dJ'/d theta_K . d theta_K / d eta  (+ the direct dJ'/d eta).

It is truncated over the window: theta_0, the inner state at the window's
start, is a constant (`stop_gradient`), so nothing is differentiated past K
updates (ibid., eq. 4 with mu = 0). Two forms, for one inner-update contract:

- `meta_gradient`, reverse mode through K updates (`lax.scan`): for many
  meta-parameters (a meta-network, LPG: Oh et al. 2020, "Discovering RL
  Algorithms", Section 3.3).
- `update_jacobian` and `contract`, forward mode through one update: d theta'/d eta
  of a few scalar meta-parameters is kept (Xu et al.'s trace z, eq. 4) and met
  with the outer gradient an update later, on the NEXT trajectory, without
  storing this one (`meta_gradient_rl`).

Everything is a pure function of arrays, so it runs inside `learn`: under
Anakin a population `vmap`s it and `shard_map` replicates it. The inner
update averages its gradients over `axis_name` as every `learn` does
(`optimizer.sgd_step`), and the meta-gradient is averaged the same way, as
any gradient of replicated parameters is (`collectives.mean_grad`): each
device differentiates its own outer loss, through the averaged inner
updates, with respect to its own copy of the meta-parameters, and the mean
of those is the meta-gradient of the outer loss averaged over devices.
"""

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp

from podracer.devices import collectives

# inner_update(meta_params, inner_state, batch) -> (inner_state, metrics): one `learn`-style update, differentiable
# in meta_params; it averages its own gradients over the device axis.
InnerUpdate = Callable[[Any, Any, Any], tuple[Any, dict]]
# outer_loss(meta_params, inner_state, batch) -> (scalar, aux): the objective of the updated inner state, this
# device's shard; it may read meta_params directly (a regulariser of a meta-network's outputs).
OuterLoss = Callable[[Any, Any, Any], tuple[jax.Array, Any]]


def inner_updates(inner_update: InnerUpdate, meta_params: Any, inner_state: Any, batches: Any) -> tuple[Any, dict]:
    """K inner updates from `inner_state` held constant (the truncation), one per batch of `batches` (leading axis K).

    Returns the inner state after the K updates and each update's metrics, `[K]`.
    """
    start = jax.lax.stop_gradient(inner_state)
    return jax.lax.scan(lambda state, batch: inner_update(meta_params, state, batch), start, batches)


def meta_gradient(inner_update: InnerUpdate, outer_loss: OuterLoss, axis_name: collectives.AxisName = None) -> Callable:
    """`fn(meta_params, inner_state, inner_batches, outer_batch) -> (meta_grads, (inner_state_K, outer_aux, inner_metrics))`.

    The contract (what part 2's LPG meta-training plugs in: meta_params = the
    meta-network's weights, inner_update = an agent update towards its
    targets, outer_loss = an A2C objective of the updated agent plus
    regularisers):

    - `inner_update(meta_params, inner_state, batch) -> (inner_state, metrics)`
      is one update, differentiable in `meta_params` and in the state, that
      averages its gradients over `axis_name` itself (`optimizer.sgd_step`);
      its optimiser must be differentiable everywhere (`make_optimizer(...,
      eps_root=...)` for Adam, whose sqrt has no derivative at 0).
    - `inner_batches`: leaves `[K, ...]`, one batch (this device's shard) per
      inner update, in order; `outer_batch` the data the outer loss sees.
    - `outer_loss(meta_params, inner_state_K, outer_batch) -> (loss, aux)` on
      this device's shard; aux leaves are averaged over devices.
    - `inner_state` is where the truncated window starts: no gradient flows
      into it. The returned `inner_state_K` is the state after the K updates
      (the agent goes on from it), replicated like the input.
    - `meta_grads` (the structure of `meta_params`) is the gradient of the
      outer loss averaged over `axis_name`'s devices; None: one device. As
      every podracer program, it is written pmap-style: under `shard_map`
      without `check_vma` (`devices.topology.per_device_program`), where the
      inner state after the updates is the same on every device.
    """

    def objective(meta_params, inner_state, inner_batches, outer_batch):
        state, inner_metrics = inner_updates(inner_update, meta_params, inner_state, inner_batches)
        loss, aux = outer_loss(meta_params, state, outer_batch)
        return loss, (state, aux, inner_metrics)

    grad_fn = collectives.local_grad(objective, axis_name)

    def fn(meta_params, inner_state, inner_batches, outer_batch):
        grads, (state, aux, inner_metrics) = grad_fn(meta_params, inner_state, inner_batches, outer_batch)
        grads, aux = collectives.mean((grads, aux), axis_name)
        return grads, (state, aux, inner_metrics)

    return fn


def update_jacobian(
    inner_update: InnerUpdate, meta_params: dict[str, jax.Array], inner_state: Any, batch: Any, select: Callable
) -> dict[str, Any]:
    """`{name: d select(inner_state') / d meta_params[name]}` of one update from `inner_state` held constant.

    Forward mode (one linearisation, then a Jacobian-vector product per scalar
    meta-parameter, batched): Xu et al.'s trace z' = d theta'/d eta (eq. 4, mu = 0),
    for a few scalars; `select` picks what the outer objective will be
    differentiated by (the network's parameters). Replicated when the update
    averages over devices: the tangent of a `pmean` is the `pmean` of tangents.
    """
    chex.assert_rank(list(meta_params.values()), 0)
    start = jax.lax.stop_gradient(inner_state)
    _, jvp = jax.linearize(lambda meta: select(inner_update(meta, start, batch)[0]), meta_params)
    basis = jnp.eye(len(meta_params))  # Row i: the tangent along the i-th meta-parameter; one batched product.
    tangents = {name: basis[:, i].astype(value.dtype) for i, (name, value) in enumerate(meta_params.items())}
    columns = jax.vmap(jvp)(tangents)
    return {name: jax.tree.map(lambda x, i=i: x[i], columns) for i, name in enumerate(meta_params)}


def contract(jacobian: dict[str, Any], outer_grads: Any) -> dict[str, jax.Array]:
    """`{name: dJ'/d theta' . d theta'/d eta_name}`: the chain rule (Xu et al. 2018, eq. 2) for each scalar."""
    return {
        name: sum(jnp.vdot(g, d) for g, d in zip(jax.tree.leaves(outer_grads), jax.tree.leaves(tangent), strict=True))
        for name, tangent in jacobian.items()
    }
