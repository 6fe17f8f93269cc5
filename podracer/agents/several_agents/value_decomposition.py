"""The value-decomposition losses: independent Q-learning, VDN and QMIX on sampled sequences of every agent.

One recurrent Q-network, shared by the agents and told apart by their one-hot
ids (JaxMARL's `baselines/QLearning`, pymarl's parameter sharing), gives every
agent's utilities Q_a(tau_a, .) over a sampled sequence `[L, S]` of the
environment's steps (`agents_view`), replayed R2D2-style from the state
stored with the sequence's first step (`recurrent_replay`). A mixer
(`mixers`) turns the agents' chosen values into the team's (or, for
independent Q-learning, leaves them each agent's), and the loss is the
squared TD error of the mixed values (Rashid et al. 2018, eq. 6;
Sunehag et al. 2018, Section 3):

    L = sum_b (y_tot - Q_tot(tau, u, s; theta))^2,
    y_tot = r + gamma Q_tot(tau', u*, s'; theta^-),

with the n-step form of y_tot where `n_step` > 1 (`returns.n_step_returns`).
With double Q (van Hasselt et al. 2016, eq. 4; as JaxMARL's scripts) each
agent's bootstrap action u*_a is the argmax of the online network's
Q_a(tau'_a, .), valued by the target network's, and mixed by the target mixer.

Rewards are multiplied by `reward_scale` (JaxMARL's `REW_SCALE`). The team's
reward is the mean of the agents' rewards `[N]`: on SMAX, where every agent is
paid the team's reward, that is the reward; JaxMARL's `CTRolloutManager` sums
MPE's (its `global_reward`), which `reward_scale = N` reproduces. The team's discount is 0 only where every agent's
is (the episode terminated); a unit that died alone keeps the team going.
Independent Q-learning uses each agent's own reward and discount.
"""

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp
from flax import struct

from podracer.agents.learning import recurrent_replay, replay
from podracer.agents.learning.returns import n_step_returns
from podracer.agents.models import networks
from podracer.agents.several_agents import mixers, per_agent
from podracer.agents.trajectory import Trajectory, transitions
from podracer.envs.actions import GLOBAL_STATE


@struct.dataclass
class Params:
    """The shared agents' Q-network and the mixer's weights (`{}` for VDN's sum and for no mixer)."""

    agent: networks.NetworkParams
    mixer: Any


@dataclasses.dataclass(frozen=True)
class LossSettings:
    """What the loss reads of `config.agent` (each field is described in `q_mixing.defaults`)."""

    mixer: str
    gamma: float
    n_step: int
    double_q: bool
    reward_clip: float
    reward_scale: float
    burn_in: int
    sequence_length: int
    priority_eta: float


def agents_view(trajectory: Trajectory) -> Trajectory:
    """Sampled sequences `[L, S]` of the environment's steps as the shared Q-network reads them, `[L, S * N]`: each
    agent's own observation and one-hot id, from the state stored per agent `[1, S, N, ...]`."""
    return jax.tree.map(per_agent.merge_agent_axis, per_agent.agents_trajectory(trajectory, with_id=True))


def split_agents(q_values: chex.Array, agents: int) -> chex.Array:
    """Q-values `[L, S * N, A]` of `agents_view` as every agent's `[L, S, N, A]`."""
    return q_values.reshape(q_values.shape[:1] + (-1, agents) + q_values.shape[2:])


def bootstrap_values(q_online: chex.Array, q_target: chex.Array, double_q: bool) -> chex.Array:
    """Each agent's value `[..., N]` of the next state: Q_target(tau', argmax_u Q_online(tau', u)) with double Q
    (van Hasselt et al. 2016, eq. 4), max_u Q_target(tau', u) without."""
    chex.assert_equal_shape([q_online, q_target])
    if not double_q:
        return jnp.max(q_target, axis=-1)
    return jnp.take_along_axis(q_target, jnp.argmax(q_online, axis=-1)[..., None], axis=-1)[..., 0]


def team_transitions(rewards: chex.Array, discounts: chex.Array, mixer: str) -> tuple[chex.Array, chex.Array]:
    """The rewards and discounts `[T, S, K]` the mixed values learn from, from the agents' `[T, S, N]`: each agent's
    own without a mixer (K = N); the team's, the agents' mean reward and their largest discount, with one (K = 1)."""
    if mixer == "none":
        return rewards, discounts
    return jnp.mean(rewards, axis=-1, keepdims=True), jnp.max(discounts, axis=-1, keepdims=True)


def n_step_targets(
    rewards: chex.Array, discounts: chex.Array, ends_episode: chex.Array, next_values: chex.Array, n_step: int
) -> chex.Array:
    """The n-step targets `[T - n + 1, S, K]` of the mixed values: rewards and discounts `[T, S, K]`, the episode's
    ends `[T, S]`, the target's mixed bootstrap values of the steps reached, 1 to T, `[T, S, K]`
    (`returns.n_step_returns` per k, which never bootstraps from step 0)."""
    chex.assert_equal_shape([rewards, discounts, next_values])
    lambdas = jnp.broadcast_to((1.0 - ends_episode)[..., None], rewards.shape)
    values = jnp.concatenate([jnp.zeros_like(next_values[:1]), next_values])  # Step 0's value is never read.
    flat = [x.reshape(x.shape[0], -1) for x in (rewards, discounts, values, lambdas)]
    return n_step_returns(*flat, n_step).reshape((-1,) + rewards.shape[1:])


def loss(
    params: Params, sample: replay.Sample, target_params: Params, mixer: mixers.QMixer | None, settings: LossSettings
) -> tuple[chex.Array, tuple[dict, chex.Array]]:
    """The importance-weighted squared TD error of the mixed values over each sequence's trained transitions;
    aux `(metrics, priorities [S])` (the mix of the largest and mean |TD|, `recurrent_replay.sequence_priorities`).

    The first `sequence_length` transitions of the sampled `sequence_length + n_step` steps are trained, past
    the `burn_in`; the QMIX mixer reads the global state of each step.
    """
    trajectory = recurrent_replay.from_stored_state(sample.trajectory)
    length = settings.sequence_length
    view, agents = agents_view(trajectory), trajectory.timestep.reward.shape[-1]
    q_values = split_agents(
        recurrent_replay.online_q_values(params.agent, view, settings.burn_in, trained=length), agents
    )
    q_target = split_agents(networks.unroll_trajectory(networks.unroll, target_params.agent, view), agents)
    state = trajectory.timestep.observation.get(GLOBAL_STATE)
    next_values = bootstrap_values(jax.lax.stop_gradient(q_values[1:]), q_target[1:], settings.double_q)
    next_mixed = mixers.mix(
        settings.mixer, mixer, target_params.mixer, next_values, None if state is None else state[1:]
    )
    tr = transitions(trajectory, settings.gamma, settings.reward_clip)
    rewards, discounts = team_transitions(settings.reward_scale * tr.rewards, tr.discounts, settings.mixer)
    targets = n_step_targets(rewards, discounts, tr.ends_episode, next_mixed, settings.n_step)
    chosen = jnp.take_along_axis(q_values[:length], trajectory.action[:length, ..., None], axis=-1)[..., 0]
    mixed = mixers.mix(settings.mixer, mixer, params.mixer, chosen, None if state is None else state[:length])
    td_errors = jax.lax.stop_gradient(targets) - mixed
    mask = recurrent_replay.trained_mask(trajectory, settings.burn_in, length)
    count = jnp.maximum(jnp.sum(mask) * td_errors.shape[-1], 1.0)
    total = jnp.sum(mask[..., None] * sample.weights[:, None] * td_errors**2) / count
    metrics = {
        "loss": total,
        "q_mean": jnp.mean(chosen[settings.burn_in :]),
        "q_tot_mean": jnp.sum(mask[..., None] * mixed) / count,
        "td_abs": jnp.sum(mask[..., None] * jnp.abs(td_errors)) / count,
    }
    td_abs = jnp.mean(jnp.abs(td_errors), axis=-1)
    return total, (metrics, recurrent_replay.sequence_priorities(td_abs, mask, settings.priority_eta))
