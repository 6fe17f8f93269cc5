"""The actor-critic objective that actor-critic and IMPALA share; they differ only in their targets."""

import jax.numpy as jnp

from podracer.agents.models import policy


def policy_gradient_loss(
    log_probs: jnp.ndarray,
    policy_outputs: dict,
    values: jnp.ndarray,
    valid: jnp.ndarray,
    advantages: jnp.ndarray,
    value_targets: jnp.ndarray,
    *,
    value_cost: float,
    entropy_cost: float,
) -> tuple[jnp.ndarray, dict]:
    """Policy gradient with a baseline, a squared-error critic and an entropy bonus (Mnih et al. 2016, "A3C"):

      L = -E[log pi(a_t|s_t) sg(A_t)] + c_v E[1/2 (sg(G_t) - v_t)^2] - c_H E[H(pi(.|s_t))]

    Per-transition inputs `[T, B]`: log pi(a_t|s_t), the policy's outputs
    (`policy`'s head dict, leaves `[T, B, ...]`) and the values v_t of the observations actions were chosen
    from, the advantages A_t and value targets G_t. The caller holds A_t and
    G_t constant in the parameters by computing them from `stop_gradient`
    values, not by stopping every gradient through them: their derivatives
    in the hyperparameters they are made of (gamma, lambda) are what
    meta-gradients flow through (`podracer.agents.meta.meta_gradient_rl`). Means
    run over all T x B transitions with masked entries counted as zero, so
    averaging equal shards across devices gives exactly the whole-batch loss.
    """
    policy_loss = -jnp.mean(valid * log_probs * advantages)
    value_loss = 0.5 * jnp.mean(valid * (value_targets - values) ** 2)
    entropy = jnp.mean(valid * policy.entropy(policy_outputs))
    total = policy_loss + value_cost * value_loss - entropy_cost * entropy
    return total, {"loss": total, "policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy}
