"""IMPALA: an off-policy actor-critic corrected with V-trace (Espeholt et al. 2018).

The acting policy mu (`trajectory.behaviour_logits`) may lag the learner's pi.
With log_rho_t = log pi(a_t|x_t) - log mu(a_t|x_t), V-trace (Section 4, eq. 1,
see `returns.vtrace`) gives value targets vs_t and the policy-gradient
advantages of Section 4.2, A_t = min(rho-bar_pg, pi/mu) (r_t + d_t vs_{t+1} - v_t)
at lambda = 1 (with lambda < 1, vs_{t+1} is mixed with v_{t+1} as in rlax). The loss is

  L = -E[log pi(a_t|x_t) sg(A_t)] + c_v E[1/2 (sg(vs_t) - v_t)^2] - c_H E[H(pi(.|x_t))]

with no gradient through the importance weights or the targets. Means run over
all T x B transitions of the local shard with masked entries counted as zero,
as in `actor_critic`, so `pmean` over equal shards gives the whole-batch loss.
"""

from typing import Any, Callable

import jax
import jax.numpy as jnp

from podracer.agents import policy
from podracer.agents.actor_critic import evaluate, policy_gradient_loss
from podracer.agents.returns import vtrace
from podracer.agents.trajectory import Trajectory, transitions


def loss(
    params: Any,
    trajectory: Trajectory,
    *,
    apply_fn: Callable,
    gamma: float,
    vtrace_lambda: float,
    clip_rho_threshold: float,
    clip_pg_rho_threshold: float,
    value_cost: float,
    entropy_cost: float,
) -> tuple[jnp.ndarray, dict]:
    step_type = trajectory.timestep.step_type
    logits, values = evaluate(apply_fn, params, trajectory.timestep.observation, step_type.shape)
    tr = transitions(trajectory, gamma)
    log_probs = policy.log_prob(logits[:-1], trajectory.action)
    log_rhos = jax.lax.stop_gradient(log_probs - policy.log_prob(trajectory.behaviour_logits, trajectory.action))
    targets = vtrace(  # Held constant by `policy_gradient_loss`.
        tr.rewards,
        tr.discounts,
        values,
        log_rhos,
        vtrace_lambda * (1.0 - tr.bootstrap_here),
        clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold,
    )
    total, metrics = policy_gradient_loss(
        log_probs,
        logits[:-1],
        values[:-1],
        tr.valid,
        targets.pg_advantages,
        targets.vs,
        value_cost=value_cost,
        entropy_cost=entropy_cost,
    )
    clipped_rhos = jnp.minimum(clip_rho_threshold, jnp.exp(log_rhos))
    metrics["mean_rho"] = jnp.sum(tr.valid * clipped_rhos) / jnp.maximum(jnp.sum(tr.valid), 1.0)
    return total, metrics
