"""IMPALA: an off-policy actor-critic corrected with V-trace (Espeholt et al. 2018).

The acting policy mu (the policy outputs `act` stored in `trajectory.extras`) may lag
the learner's pi. With log_rho_t = log pi(a_t|x_t) - log mu(a_t|x_t), V-trace
(Section 4, eq. 1, see `returns.vtrace`) gives value targets vs_t and the
policy-gradient advantages of Section 4.2, A_t = min(rho-bar_pg, pi/mu)
(r_t + d_t vs_{t+1} - v_t) at lambda = 1 (with lambda < 1, vs_{t+1} is mixed
with v_{t+1} as in rlax). The loss (`losses.policy_gradient_loss`) is

  L = -E[log pi(a_t|x_t) sg(A_t)] + c_v E[1/2 (sg(vs_t) - v_t)^2] - c_H E[H(pi(.|x_t))]

with no gradient through the importance weights or the targets. `learn` is one
gradient step on the whole trajectory, averaged over devices. With
`agent.meta_gradient.learn`, gamma, the V-trace lambda and the entropy cost may
be learned online by meta-gradients (`meta_gradient_rl`, Xu et al. 2018).
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms.network_agent import one_step_agent, shared_defaults, validate_shared
from podracer.agents.learning.losses import policy_gradient_loss
from podracer.agents.learning.returns import vtrace
from podracer.agents.meta import meta_gradient_rl
from podracer.agents.models import networks, policy
from podracer.agents.trajectory import Trajectory, transitions
from podracer.config import field_checks


def defaults() -> ConfigDict:
    return shared_defaults(
        vtrace_lambda=1.0,
        clip_rho_threshold=1.0,
        clip_pg_rho_threshold=1.0,
        meta_gradient=meta_gradient_rl.defaults("vtrace_lambda"),
    )


def validate(config: ConfigDict) -> None:
    validate_shared(config)
    field_checks.fraction(config, "agent.vtrace_lambda", example=1.0)
    meta_gradient_rl.validate(config)
    for field in ("agent.clip_rho_threshold", "agent.clip_pg_rho_threshold"):
        field_checks.number(config, field, example=1.0, above=0.0)


def loss(
    params: Any,
    trajectory: Trajectory,
    *,
    unroll_fn: Callable,
    gamma: float,
    vtrace_lambda: float,
    clip_rho_threshold: float,
    clip_pg_rho_threshold: float,
    value_cost: float,
    entropy_cost: float,
    reward_clip: float = 0.0,
) -> tuple[jnp.ndarray, dict]:
    outputs, values = networks.unroll_trajectory(unroll_fn, params, trajectory)
    outputs = jax.tree.map(lambda x: x[:-1], outputs)  # The policy where actions were chosen.
    tr = transitions(trajectory, gamma, reward_clip)
    log_probs = policy.log_prob(outputs, trajectory.action)
    behaviour_log_probs = policy.log_prob(trajectory.extras, trajectory.action)
    log_rhos = jax.lax.stop_gradient(log_probs - behaviour_log_probs)
    targets = vtrace(  # Constant in the parameters, not in gamma and lambda.
        tr.rewards,
        tr.discounts,
        jax.lax.stop_gradient(values),
        log_rhos,
        tr.lambdas(vtrace_lambda),
        clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold,
    )
    total, metrics = policy_gradient_loss(
        log_probs,
        outputs,
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


def build(config: ConfigDict, num_updates: int) -> Agent:
    return one_step_agent(config, loss, num_updates)


registry.register("impala", defaults=defaults, build=build, validate=validate)
