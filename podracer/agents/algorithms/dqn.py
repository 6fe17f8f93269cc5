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
from flax import struct
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import shared_fields
from podracer.agents.algorithms.network_agent import recurrent_state
from podracer.agents.learning import exploration, recurrent_replay, replay
from podracer.agents.learning.optimizer import make_optimizer
from podracer.agents.learning.returns import n_step_returns
from podracer.agents.models import networks
from podracer.agents.trajectory import Trajectory, transitions
from podracer.config import field_checks, settings
from podracer.devices import collectives
from podracer.devices.per_device import PerDevice
from podracer.envs.actions import action_mask
from podracer.envs.timestep import FIRST, TimeStep


def defaults() -> ConfigDict:
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
    field_checks.fraction(config, "agent.gamma", example=0.99)
    field_checks.integer(config, "agent.n_step", at_least=1, example=3)
    field_checks.boolean(config, "agent.double_q")
    field_checks.integer(config, "agent.target_update_period", at_least=1, example=500)
    field_checks.number(config, "agent.target_tau", example=1.0, above=0.0, at_most=1.0)
    shared_fields.validate_epsilon(config)
    field_checks.number(config, "agent.huber_delta", example=1.0, above=0.0)
    field_checks.number(config, "agent.reward_clip", example=1.0, at_least=0.0)
    shared_fields.validate_replay(config)
    shared_fields.validate_recurrent(config)


@struct.dataclass
class DQNState:
    params: networks.NetworkParams  # The online network.
    target_params: networks.NetworkParams
    opt_state: Any
    replay: PerDevice  # Each device's own `replay.Replay`.
    learn_calls: chex.Array  # int32: `learn` calls so far (the epsilon schedule's clock).
    gradient_steps: chex.Array  # int32: gradient steps so far (the target update's clock).


def recurrent_act(
    params: exploration.ActingParams, timestep: TimeStep, state: Any, key: chex.PRNGKey
) -> tuple[chex.Array, dict, Any]:
    """`exploration.act` with a recurrent core, which restarts its state where the step type is FIRST; it returns
    the core's next state, and in the extras the state it was given (R2D2's stored state, `recurrent_replay.STATE`)."""
    next_state, q_values = params.network.step(state, timestep.observation, timestep.step_type == FIRST)
    extras = {"q_values": q_values, recurrent_replay.STATE: state}
    actions = exploration.epsilon_greedy(q_values, params.epsilon, key, action_mask(timestep.observation))
    return actions, extras, next_state


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
    q_values = recurrent_replay.online_q_values(params, trajectory, loss_settings.burn_in)
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
    agent_config, network = config.agent, shared_fields.network_settings(config)
    replay_setup = shared_fields.replay_setup(
        config, sequence_length=agent_config.sequence_length + agent_config.n_step
    )
    optimizer = make_optimizer(
        shared_fields.optimizer_settings(config), gradient_steps=num_updates * agent_config.replay_ratio
    )
    epsilon = exploration.epsilon_schedule(shared_fields.epsilon_settings(config), num_updates)
    loss_settings = settings.read(LossSettings, agent_config)

    stored_extras = recurrent_replay.stored_state_spec(network)

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> DQNState:
        module = networks.make_q_network(network, observation_spec, action_spec)
        params = networks.init_module(key, module, observation_spec)
        return DQNState(
            params=params,
            target_params=params,
            opt_state=optimizer.init(params),
            replay=replay.init(replay_setup, observation_spec, jax.ShapeDtypeStruct((), jnp.int32), stored_extras),
            learn_calls=jnp.int32(0),
            gradient_steps=jnp.int32(0),
        )

    def acting_params(state: DQNState) -> exploration.ActingParams:
        return exploration.acting_params(state.params, epsilon, state.learn_calls)

    def gradient_step(state: DQNState, sample: replay.Sample, axis_name) -> tuple[DQNState, dict, chex.Array]:
        grad_fn = collectives.local_grad(lambda p, s: loss(p, s, state.target_params, loss_settings), axis_name)
        grads, (metrics, priorities) = grad_fn(state.params, sample)
        grads, metrics = collectives.mean((grads, metrics), axis_name)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        steps = state.gradient_steps + 1
        target = optax.periodic_update(
            optax.incremental_update(params, state.target_params, agent_config.target_tau),
            state.target_params,
            steps,
            agent_config.target_update_period,
        )
        state = state.replace(params=params, target_params=target, opt_state=opt_state, gradient_steps=steps)
        return state, {**metrics, "grad_norm": optax.tree.norm(grads)}, priorities

    replayed_learn = replay.make_learn(replay_setup, gradient_step)

    def learn(state: DQNState, trajectory: Trajectory, key: chex.PRNGKey, axis_name=None) -> tuple[DQNState, dict]:
        learn_calls = state.learn_calls
        state, metrics = replayed_learn(state, recurrent_replay.kept_extras(trajectory), key, axis_name)
        return state, {**metrics, "epsilon": epsilon(learn_calls)}

    sampling_act = exploration.act if network.core == "none" else recurrent_act
    return Agent(
        init=init,
        act=sampling_act,
        learn=learn,
        acting_params=acting_params,
        initial_state=recurrent_state(network, networks.q_network_state),
        greedy_act=exploration.greedy(sampling_act),
    )


registry.register(
    "dqn",
    defaults=defaults,
    build=build,
    validate=validate,
    config_defaults=shared_fields.REPLAY_CONFIG_DEFAULTS,
)
