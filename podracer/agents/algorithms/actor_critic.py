"""Advantage actor-critic with TD(lambda) returns, the agent of the Podracer paper's Anakin colab.

Policy gradient (Williams 1992; Mnih et al. 2016, "A3C") with the TD(lambda)
return as target (Sutton & Barto 2018, eq. 12.18), a squared-error critic and
an entropy bonus (`losses.policy_gradient_loss`):

  L = -E[log pi(a_t|s_t) sg(G_t - v_t)] + c_v E[1/2 (sg(G_t) - v_t)^2] - c_H E[H(pi(.|s_t))]

`learn` is one gradient step on the whole trajectory, averaged over devices.
With `agent.meta_gradient.learn`, gamma, lambda and the entropy cost may be
learned online by meta-gradients (`meta_gradient_rl`, Xu et al. 2018).
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
from podracer.agents.learning.returns import lambda_returns
from podracer.agents.meta import meta_gradient_rl
from podracer.agents.models import networks, policy
from podracer.agents.trajectory import Trajectory, transitions
from podracer.config import field_checks


def defaults() -> ConfigDict:
    return shared_defaults(td_lambda=0.9, meta_gradient=meta_gradient_rl.defaults("td_lambda"))


def validate(config: ConfigDict) -> None:
    validate_shared(config)
    field_checks.fraction(config, "agent.td_lambda", example=0.9)
    meta_gradient_rl.validate(config)


def loss(
    params: Any,
    trajectory: Trajectory,
    *,
    unroll_fn: Callable,
    gamma: float,
    td_lambda: float,
    value_cost: float,
    entropy_cost: float,
    reward_clip: float = 0.0,
) -> tuple[jnp.ndarray, dict]:
    outputs, values = networks.unroll_trajectory(unroll_fn, params, trajectory)
    outputs = jax.tree.map(lambda x: x[:-1], outputs)  # The policy where actions were chosen.
    tr = transitions(trajectory, gamma, reward_clip)
    targets = jax.lax.stop_gradient(values)  # Constant in the parameters, not in gamma and lambda.
    returns = lambda_returns(tr.rewards, tr.discounts, targets, tr.lambdas(td_lambda))
    return policy_gradient_loss(
        policy.log_prob(outputs, trajectory.action),
        outputs,
        values[:-1],
        tr.valid,
        returns - targets[:-1],
        returns,
        value_cost=value_cost,
        entropy_cost=entropy_cost,
    )


def build(config: ConfigDict, num_updates: int) -> Agent:
    return one_step_agent(config, loss, num_updates)


registry.register("actor_critic", defaults=defaults, build=build, validate=validate)
