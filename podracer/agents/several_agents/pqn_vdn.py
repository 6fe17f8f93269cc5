"""PQN-VDN: PQN's Q(lambda) on each rollout, no replay and no target network, on VDN's sum of the agents' Q-values.

PQN (Gallici et al., ICLR 2025, "Simplifying Deep Temporal Difference
Learning", Algorithm 1; `podracer.agents.algorithms.pqn`) with the team's
value decomposed as VDN's (Sunehag et al. 2018, eq. 1), as JaxMARL's
`baselines/QLearning/pqn_vdn_ff.py`: one LayerNorm Q-network, shared by the
agents and reading each agent's observation and one-hot id, gives every
agent's Q_a; the team's value is Q_tot(s, u) = sum_a Q_a(o_a, u_a). Each
`learn` call, on a rollout `[T + 1, B]` of the environment's steps:

1. computes the team's lambda-return targets backwards (PQN's Section 4 with
   the greedy joint action's value sum_a max_u Q_a(o_a, u) as the bootstrap),
       R_t = r_t + gamma d_t [lambda R_{t+1} + (1 - lambda) sum_a max_u Q_a(o_{t+1,a}, u)],
   `returns.lambda_returns`; r_t is the team's reward and d_t its discount
   (`value_decomposition.team_transitions`: the agents' mean reward times
   `reward_scale`, their largest discount), lambda cut where an episode ends;
2. takes `num_epochs` x `num_minibatches` gradient steps on
   0.5 (sum_a Q_a(o_a, u_a) - R_t)^2 over shuffled minibatches of this
   device's environment steps (every agent of a step together), gradients
   averaged over devices.

Acting is epsilon-greedy per agent on its own Q-values (`exploration`,
lifted by `per_agent`), whose extras (the Q-values) the targets reuse. The
Q-network is feed-forward.
"""

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import pqn, shared_fields
from podracer.agents.learning.returns import lambda_returns
from podracer.agents.models import networks
from podracer.agents.several_agents import mixers, per_agent, q_mixing, value_decomposition
from podracer.agents.trajectory import Trajectory, merge_leading_dims, transitions
from podracer.envs import env_registry


def defaults() -> ConfigDict:
    """PQN's fields (`pqn.defaults`) at JaxMARL's `pqn_vdn_ff_mpe.yaml` values."""
    config = pqn.defaults()
    config.update({"gamma": 0.9, "td_lambda": 0.3, "num_epochs": 4, "num_minibatches": 16, "epsilon_end": 0.1})
    return config


def team_lambda_targets(
    trajectory: Trajectory, q_values: chex.Array, target_settings: pqn.TargetSettings
) -> chex.Array:
    """The team's lambda-return targets `[T, B]` from every agent's Q-values `[T + 1, B, N, A]` at the rollout's
    steps (the first is not read), bootstrapping from VDN's sum over agents of each agent's greedy value."""
    chex.assert_rank(q_values, 4)
    tr = transitions(trajectory, target_settings.gamma, target_settings.reward_clip)
    rewards, discounts = value_decomposition.team_transitions(
        target_settings.reward_scale * tr.rewards, tr.discounts, "vdn"
    )
    values = mixers.vdn_mix(jnp.max(q_values, axis=-1))
    return lambda_returns(rewards[..., 0], discounts[..., 0], values, tr.lambdas(target_settings.td_lambda))


def loss(params: networks.NetworkParams, batch: pqn.Samples) -> tuple[chex.Array, dict]:
    """0.5 (sum_a Q_a(o_a, u_a) - R)^2, a mean over the batch's environment steps, the reset steps counting as zero."""
    chex.assert_rank([batch.action, batch.target, batch.valid], [3, 2, 2])
    _, q_values = params.unroll((), batch.observation, jnp.zeros(batch.action.shape, bool))
    chosen = jnp.take_along_axis(q_values, batch.action[..., None], axis=-1)[..., 0]
    td_errors = batch.target - mixers.vdn_mix(chosen)
    total = 0.5 * jnp.mean(batch.valid * td_errors**2)
    return total, {"loss": total, "q_mean": jnp.mean(batch.valid[..., None] * chosen)}


def make_samples(
    params: networks.NetworkParams, trajectory: Trajectory, target_settings: pqn.TargetSettings
) -> tuple[pqn.Samples, chex.Array]:
    """Every environment step of the rollout with the team's target, as `[1, T * B]` (each agent's observation and
    action `[1, T * B, N, ...]`); and the targets' mean over real steps."""
    last = per_agent.agents_view(jax.tree.map(lambda x: x[-1], trajectory.timestep.observation), 1, True)
    _, last_q = params.step((), last, jnp.zeros(trajectory.action.shape[1:], bool))
    targets = team_lambda_targets(
        trajectory, jnp.concatenate([trajectory.extras["q_values"], last_q[None]]), target_settings
    )
    valid = transitions(trajectory, target_settings.gamma).valid
    observation = jax.tree.map(lambda x: x[:-1], trajectory.timestep.observation)
    samples = pqn.Samples(
        observation=per_agent.agents_view(observation, 2, True), action=trajectory.action, target=targets, valid=valid
    )
    target_mean = jnp.sum(valid * targets) / jnp.maximum(jnp.sum(valid), 1.0)
    return jax.lax.stop_gradient(jax.tree.map(lambda x: merge_leading_dims(x)[None], samples)), target_mean


def build(config: ConfigDict, num_updates: int) -> Agent:
    def one_agents_specs(observation_spec: dict, action_spec: Any) -> tuple:
        return per_agent.agent_observation_spec(observation_spec, with_id=True), per_agent.agent_action_spec(
            action_spec
        )

    init, learn, acting_params = pqn.learner(
        config, num_updates, make_samples, loss, one_agents_specs, what="environment steps"
    )
    agents = env_registry.agent_layout(config)
    acting = q_mixing.acting_agent(shared_fields.network_settings(config), agents)
    return dataclasses.replace(acting, init=init, learn=learn, acting_params=acting_params)


registry.register(
    "pqn_vdn",
    defaults=defaults,
    build=build,
    validate=pqn.validate,
    several_agents=True,
    check_environment=q_mixing.check_environment,
)
