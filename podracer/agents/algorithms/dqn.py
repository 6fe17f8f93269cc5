"""DQN from a device-resident replay buffer: double Q-learning, n-step returns, a target network, epsilon-greedy acting.

Q-learning with a network (Mnih et al. 2015, "Human-level control through
deep reinforcement learning", Algorithm 1) and the two extensions of Rainbow
(Hessel et al. 2018) that need no change to the network:

- n-step returns (Sutton 1988; Hessel et al. 2018, eq. 2), cut where an
  episode ends inside the n steps and bootstrapped there with the
  environment's discount (0 at termination, gamma at a time limit):
    G_t = r_{t+1} + gamma d_{t+1} (G_{t+1} or, at the n-th step or the end of the episode, v(s_{t+1})),
  the TD(lambda) recursion with lambda = 1 inside an episode and 0 at its end
  over a window of n steps (`returns.n_step_returns`);
- double Q-learning (van Hasselt et al. 2016, eq. 4): the online network
  chooses the bootstrap action, the target network values it,
  v(s) = Q_target(s, argmax_a Q(s, a)); plain DQN takes max_a Q_target(s, a).

The loss is the Huber loss of the TD error G_t - Q(s_t, a_t) (Mnih et al. 2015,
Methods), weighted by the importance weights of a prioritised buffer (Schaul
et al. 2016, Algorithm 1), averaged over the trained transitions.

Each `learn` call adds the trajectory to the buffer, then takes `replay_ratio`
gradient steps on sampled sequences of `sequence_length + n_step` steps, each
device sampling its own buffer and the gradients averaged over devices, once
the buffer holds `min_replay_size` items. A feed-forward Q-network
(`network.core = "none"`) trains the first transition of each sequence of
n + 1 steps (`sequence_length = 1`), and its priority is its absolute TD error.
With a recurrent core (`network.core` "lstm" or "gru") DQN is R2D2's
(Kapturowski et al. 2019, Section 3; `recurrent_replay`): `act` stores the
state it was given at each step, a sampled sequence is replayed from the
state stored with its first step ("stored state"), its first `burn_in` steps
only warm that state (no loss, no gradient), the `sequence_length - burn_in`
transitions after them are trained, each with its own n-step target, and its
priority is eta max |TD| + (1 - eta) mean |TD| over them (Section 2.3,
eta = `priority_eta` = 0.9). R2D2's invertible value rescaling h(x) (Section
2.3) is not included: targets and Q-values are unscaled, as in DQN.

After every gradient step the target network moves towards the online one:
`target_tau = 1` with `target_update_period = N` copies it every N steps (Mnih
et al. 2015); `target_update_period = 1` with `target_tau < 1` is Polyak
averaging (Lillicrap et al. 2016). `act` is epsilon-greedy (`exploration`), epsilon decaying
linearly from `epsilon_start` to `epsilon_end` over the first
`epsilon_fraction` of the run's `learn` calls; its extras are the Q-values
(and a recurrent DQN's state), of which the buffer keeps only the state.
`greedy_act` is `act` with epsilon 0: the argmax of the (legal) Q-values.
"""

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import q_learning, shared_fields
from podracer.agents.learning import recurrent_replay, replay
from podracer.agents.learning.returns import n_step_returns
from podracer.agents.models import networks
from podracer.agents.trajectory import Trajectory, transitions
from podracer.config import field_checks, settings


def defaults() -> ConfigDict:
    """DQN's `config.agent`; every agent on `replayed_q_agent` starts from it (without `huber_delta`, DQN's loss's)."""
    return ConfigDict(
        {
            "gamma": 0.99,
            "n_step": 1,  # Steps of real reward before bootstrapping.
            "double_q": True,  # The online network picks the bootstrap action, the target network values it.
            "target_update_period": 500,  # Gradient steps between target updates.
            "target_tau": 1.0,  # Each target update moves tau of the way to the online network (1: a copy).
            **shared_fields.EPSILON_DEFAULTS,
            "huber_delta": 1.0,  # Where the Huber loss turns from squared to linear.
            "reward_clip": 0.0,  # > 0: rewards clipped to [-reward_clip, reward_clip] (Atari).
            **shared_fields.REPLAY_DEFAULTS,
            **shared_fields.RECURRENT_DEFAULTS,
        }
    )


def validate(config: ConfigDict) -> None:
    validate_q_learning(config)
    field_checks.number(config, "agent.huber_delta", example=1.0, above=0.0)


def validate_q_learning(config: ConfigDict) -> None:
    """Static checks of the fields every agent on `replayed_q_agent` has: DQN's but its loss's `huber_delta`."""
    field_checks.fraction(config, "agent.gamma", example=0.99)
    field_checks.integer(config, "agent.n_step", at_least=1, example=3)
    field_checks.boolean(config, "agent.double_q")
    field_checks.integer(config, "agent.target_update_period", at_least=1, example=500)
    field_checks.number(config, "agent.target_tau", example=1.0, above=0.0, at_most=1.0)
    shared_fields.validate_epsilon(config)
    field_checks.number(config, "agent.reward_clip", example=1.0, at_least=0.0)
    shared_fields.validate_replay(config)
    shared_fields.validate_recurrent(config)


def sequence_targets(
    trajectory: Trajectory,
    q_online: chex.Array,
    q_target: chex.Array,
    gamma: float,
    double_q: bool,
    reward_clip: float,
    n_step: int,
) -> chex.Array:
    """The n-step double-Q targets `[L, S]` of the first L transitions of sampled sequences of L + n timesteps.

    `q_online` and `q_target` are both networks' Q-values there, `[L + n, S, A]`;
    each target sums n real rewards, cut where the episode ends
    (`returns.n_step_returns`), then bootstraps.
    """
    chex.assert_rank([q_online, q_target], 3)
    chex.assert_equal_shape([q_online, q_target])
    if double_q:
        choice = jnp.argmax(q_online, axis=-1)
        values = jnp.take_along_axis(q_target, choice[..., None], axis=-1)[..., 0]
    else:
        values = jnp.max(q_target, axis=-1)
    tr = transitions(trajectory, gamma, reward_clip)
    return n_step_returns(tr.rewards, tr.discounts, values, tr.lambdas(1.0), n_step)


@dataclasses.dataclass(frozen=True)
class LossSettings:
    """What DQN's loss reads of `config.agent` (each field is described in `defaults`)."""

    gamma: float
    n_step: int
    double_q: bool
    huber_delta: float
    reward_clip: float
    burn_in: int
    sequence_length: int
    priority_eta: float


def loss(
    params: Any, sample: replay.Sample, target_params: Any, loss_settings: LossSettings
) -> tuple[chex.Array, tuple]:
    """The importance-weighted Huber loss of each sequence's trained transitions; aux `(metrics, priorities [S])`.

    A sampled sequence starts from the state stored with its first item; the
    online network burns in its first `burn_in` steps, the target network
    unrolls the whole sequence, and a sequence's priority mixes the largest
    and the mean |TD error| of its trained transitions (`recurrent_replay`).
    """
    trajectory = recurrent_replay.from_stored_state(sample.trajectory)
    length = loss_settings.sequence_length
    q_values = recurrent_replay.online_q_values(params, trajectory, loss_settings.burn_in, trained=length)
    q_target = networks.unroll_trajectory(networks.unroll, target_params, trajectory)
    targets = sequence_targets(
        trajectory,
        jax.lax.stop_gradient(q_values),
        q_target,
        loss_settings.gamma,
        loss_settings.double_q,
        loss_settings.reward_clip,
        loss_settings.n_step,
    )
    chosen = jnp.take_along_axis(q_values[:length], trajectory.action[:length, :, None], axis=-1)[..., 0]
    td_errors = jax.lax.stop_gradient(targets) - chosen
    mask = recurrent_replay.trained_mask(trajectory, loss_settings.burn_in, length)
    count = jnp.maximum(jnp.sum(mask), 1.0)
    total = jnp.sum(mask * sample.weights * optax.huber_loss(td_errors, delta=loss_settings.huber_delta)) / count
    metrics = {
        "loss": total,
        "q_mean": jnp.mean(chosen[loss_settings.burn_in :]),
        "td_abs": jnp.sum(mask * jnp.abs(td_errors)) / count,
    }
    return total, (metrics, recurrent_replay.sequence_priorities(jnp.abs(td_errors), mask, loss_settings.priority_eta))


def build(config: ConfigDict, num_updates: int) -> Agent:
    loss_settings = settings.read(LossSettings, config.agent)
    return q_learning.replayed_q_agent(
        config, num_updates, networks.make_q_network, lambda p, s, t, key: loss(p, s, t, loss_settings)
    )


registry.register(
    "dqn",
    defaults=defaults,
    build=build,
    validate=validate,
    config_defaults=shared_fields.REPLAY_CONFIG_DEFAULTS,
)
