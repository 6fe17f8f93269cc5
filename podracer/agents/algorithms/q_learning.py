"""What every Q-learning agent on the device replay shares: its learner state, its update, its acting, the agent.

DQN (`dqn`) and the distributional agents (`podracer.agents.value_distributions`)
differ only in their network and their loss (`QLoss`); `replayed_q_agent`
completes either into an `Agent`: the replay loop (`replay.make_learn`), a
gradient step averaged over the devices followed by the target network's
move (`make_gradient_step`), epsilon-greedy acting on the network's Q-values
(`exploration`) and, with a recurrent core, R2D2's stored state
(`recurrent_replay`, `recurrent_act`).
"""

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct
from ml_collections import ConfigDict

from podracer.agents.agent import Agent
from podracer.agents.algorithms import shared_fields
from podracer.agents.algorithms.network_agent import recurrent_state
from podracer.agents.learning import exploration, recurrent_replay, replay
from podracer.agents.learning.optimizer import key_data, make_optimizer
from podracer.agents.models import networks
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.trajectory import Trajectory
from podracer.devices import collectives
from podracer.devices.per_device import PerDevice
from podracer.envs.actions import action_mask
from podracer.envs.timestep import FIRST, TimeStep


@struct.dataclass
class DQNState:
    params: networks.NetworkParams  # The online network.
    target_params: networks.NetworkParams
    opt_state: Any
    replay: PerDevice  # Each device's own `replay.Replay`.
    learn_calls: chex.Array  # int32: `learn` calls so far (the epsilon schedule's clock).
    gradient_steps: chex.Array  # int32: gradient steps so far (the target update's clock).
    key: chex.Array  # A key's data (uint32), set by each `learn` call; each gradient step draws from it (IQN's taus).


def recurrent_act(
    params: exploration.ActingParams, timestep: TimeStep, state: Any, key: chex.PRNGKey
) -> tuple[chex.Array, dict, Any]:
    """`exploration.act` with a recurrent core, which restarts its state where the step type is FIRST; it returns
    the core's next state, and in the extras the state it was given (R2D2's stored state, `recurrent_replay.STATE`)."""
    next_state, q_values = params.network.step(state, timestep.observation, timestep.step_type == FIRST)
    extras = {"q_values": q_values, recurrent_replay.STATE: state}
    actions = exploration.epsilon_greedy(q_values, params.epsilon, key, action_mask(timestep.observation))
    return actions, extras, next_state


QLoss = Callable[[Any, replay.Sample, Any, chex.PRNGKey], tuple[chex.Array, tuple[dict, chex.Array]]]
"""`(params, sample, target_params, key) -> (loss, (metrics, priorities [S]))`: a Q-learning agent's loss on sampled
sequences of `sequence_length + n_step` steps; `key` is the gradient step's own (IQN samples its quantiles from it)."""


def make_gradient_step(
    optimizer: optax.GradientTransformation, q_loss: QLoss, target_tau: float, target_update_period: int
) -> replay.GradientStep:
    """One update of a Q-learning agent's `DQNState` from sampled sequences: the gradient of `q_loss` averaged over
    the devices, the optimiser's step, then the target network's move (every `target_update_period` steps, `tau` of
    the way to the online network)."""

    def gradient_step(state: DQNState, sample: replay.Sample, axis_name) -> tuple[DQNState, dict, chex.Array]:
        key, loss_key = jax.random.split(jax.random.wrap_key_data(state.key))
        loss_key = jax.random.fold_in(loss_key, collectives.axis_index(axis_name))  # Each device draws its own.
        grad_fn = collectives.local_grad(lambda p, s: q_loss(p, s, state.target_params, loss_key), axis_name)
        grads, (metrics, priorities) = grad_fn(state.params, sample)
        grads, metrics = collectives.mean((grads, metrics), axis_name)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        steps = state.gradient_steps + 1
        target = optax.periodic_update(
            optax.incremental_update(params, state.target_params, target_tau),
            state.target_params,
            steps,
            target_update_period,
        )
        state = state.replace(
            params=params, target_params=target, opt_state=opt_state, gradient_steps=steps, key=key_data(key)
        )
        return state, {**metrics, "grad_norm": optax.tree.norm(grads)}, priorities

    return gradient_step


def replayed_q_agent(
    config: ConfigDict,
    num_updates: int,
    make_module: Callable[[NetworkSettings, Any, Any], Any],
    q_loss: QLoss,
    act: Callable | None = None,
) -> Agent:
    """A Q-learning agent on the device replay loop: DQN's, or a distributional one's with its own network and loss.

    `make_module(network, observation_spec, action_spec)` builds the network,
    whose plain call gives the Q-values acting reads (`exploration`); the
    target network, the optimiser, epsilon-greedy acting and R2D2's stored
    state are the same for every such agent. `act` replaces the sampling act
    (noisy layers draw their weights in it); the greedy act stays the plain
    network's.
    """
    agent_config, network = config.agent, shared_fields.network_settings(config)
    replay_setup = shared_fields.replay_setup(
        config, sequence_length=agent_config.sequence_length + agent_config.n_step
    )
    optimizer = make_optimizer(
        shared_fields.optimizer_settings(config), gradient_steps=num_updates * agent_config.replay_ratio
    )
    epsilon = exploration.epsilon_schedule(shared_fields.epsilon_settings(config), num_updates)
    stored_extras = recurrent_replay.stored_state_spec(network)

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> DQNState:
        init_key, key = jax.random.split(key)
        params = networks.init_module(init_key, make_module(network, observation_spec, action_spec), observation_spec)
        return DQNState(
            params=params,
            target_params=params,
            opt_state=optimizer.init(params),
            replay=replay.init(replay_setup, observation_spec, jax.ShapeDtypeStruct((), jnp.int32), stored_extras),
            learn_calls=jnp.int32(0),
            gradient_steps=jnp.int32(0),
            key=key_data(key),
        )

    gradient_step = make_gradient_step(optimizer, q_loss, agent_config.target_tau, agent_config.target_update_period)
    replayed_learn = replay.make_learn(replay_setup, gradient_step)

    def learn(state: DQNState, trajectory: Trajectory, key: chex.PRNGKey, axis_name=None) -> tuple[DQNState, dict]:
        learn_calls = state.learn_calls
        replay_key, loss_key = jax.random.split(key)
        state = state.replace(key=key_data(loss_key))
        state, metrics = replayed_learn(state, recurrent_replay.kept_extras(trajectory), replay_key, axis_name)
        return state, {**metrics, "epsilon": epsilon(learn_calls)}

    sampling_act = exploration.act if network.core == "none" else recurrent_act
    return Agent(
        init=init,
        act=act or sampling_act,
        learn=learn,
        acting_params=lambda state: exploration.acting_params(state.params, epsilon, state.learn_calls),
        initial_state=recurrent_state(network, networks.q_network_state),
        greedy_act=exploration.greedy(sampling_act),
    )
