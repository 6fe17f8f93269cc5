"""What the built-in actor-critic agents share: a policy-and-value network, an optax optimiser, acting by sampling.

`network_agent(config, optimizer, learn)` completes an `Agent` around an
agent's own `learn`: `init` builds the network `config.network` describes for
the specs it is shown (`networks.init_params`: a categorical head for discrete
actions, a diagonal Gaussian for real vectors) and the optimiser state; `act`
samples the policy head and hands back its outputs as `extras` (the behaviour
policy that off-policy corrections need); the acting parameters are the
network's. With a recurrent core (`network.core`) the agent is recurrent: its
state is the core's, and `learn` replays each trajectory from the state it
stores (`networks.unroll_trajectory`). With `agent.normalize_observations` or `agent.scale_rewards` the
learner state also keeps running statistics (`normalization`), which `learn`
updates and applies to the trajectory before the agent's own update sees it,
and which the acting parameters carry so that `act` normalises identically.
"""

import dataclasses
import functools
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
from podracer.agents.learning.optimizer import LearnerState, make_optimizer, sgd_step, slices_gradients
from podracer.agents.meta import meta_gradient_rl
from podracer.agents.models import networks, normalization, policy
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.trajectory import Trajectory, transitions
from podracer.config import field_checks
from podracer.config.errors import ConfigError
from podracer.devices import collectives
from podracer.envs.timestep import FIRST, TimeStep

NORMALIZATION_DEFAULTS = {
    "normalize_observations": False,  # Running mean/variance per feature, shared by every replica.
    "scale_rewards": False,  # Rewards over the running std of the discounted return (MuJoCo PPO).
}


def shared_defaults(**own: Any) -> ConfigDict:
    """`config.agent` of a built-in actor-critic agent: the fields they all have (`validate_shared`), then `own`."""
    shared = {"gamma": 0.99, "value_cost": 0.5, "entropy_cost": 0.01, "reward_clip": 0.0}
    return ConfigDict({**shared, **own, **NORMALIZATION_DEFAULTS})


@struct.dataclass
class Normalizers:
    """The running statistics a network agent keeps in its learner state; None where switched off."""

    observations: normalization.RunningStatistics | None = None
    returns: normalization.RunningStatistics | None = None


def network_agent(
    config: ConfigDict,
    optimizer: optax.GradientTransformation,
    learn: Callable,
    prediction_size: int = 0,
    centralised_critic: bool = False,
) -> Agent:
    """The agent around `learn`; `prediction_size` > 0 gives its network a prediction vector in place of the value,
    and `centralised_critic` a value function of the global state (`networks.ActorCritic`)."""
    agent_config, network = config.agent, shared_fields.network_settings(config)

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> LearnerState:
        module = networks.make_network(network, observation_spec, action_spec)
        params = networks.init_module(
            key, module.clone(prediction_size=prediction_size, centralised_critic=centralised_critic), observation_spec
        )
        normalizers = Normalizers(
            observations=normalization.init(observation_spec) if agent_config.normalize_observations else None,
            returns=normalization.init(jnp.zeros(())) if agent_config.scale_rewards else None,
        )
        return LearnerState(params, optimizer.init(params), normalizers)

    def normalizing_learn(state: LearnerState, trajectory: Trajectory, key: chex.PRNGKey, axis_name=None):
        normalizers, trajectory = normalize(state.normalizers, trajectory, agent_config.gamma, axis_name)
        return learn(state.replace(normalizers=normalizers), trajectory, key, axis_name)

    def acting_params(state: LearnerState) -> networks.NetworkParams:
        return state.params.replace(observation_statistics=state.normalizers.observations)

    sampling_act, greedy_act = acts(network)
    return Agent(
        init=init,
        act=sampling_act,
        learn=normalizing_learn,
        acting_params=acting_params,
        initial_state=recurrent_state(network),
        greedy_act=greedy_act,
    )


def recurrent_state(
    network: NetworkSettings, network_state: Callable[[NetworkSettings, int], Any] = networks.network_state
) -> Callable[[int], Any] | None:
    """An agent's `initial_state` for the network `network` describes (an `ActorCritic`'s, or with
    `networks.q_network_state` a `QNetwork`'s): None for a feed-forward one."""
    if network.core == "none":
        return None
    return functools.partial(network_state, network)


def normalize(
    normalizers: Normalizers, trajectory: Trajectory, gamma: float, axis_name: collectives.AxisName
) -> tuple[Normalizers, Trajectory]:
    """The statistics updated with the trajectory (over every device), and the trajectory normalised by them."""
    timestep = trajectory.timestep
    observations, returns = normalizers.observations, normalizers.returns
    if observations is not None:  # Each timestep once: the last is the next trajectory's first.
        observations = normalization.update(
            observations, jax.tree.map(lambda x: x[:-1], timestep.observation), 2, axis_name
        )
        timestep = timestep.replace(observation=normalization.normalize_observation(observations, timestep.observation))
    if returns is not None:
        tr = transitions(trajectory, gamma)
        returns_to_go = normalization.returns_to_go(tr.rewards, gamma * (1.0 - tr.ends_episode))
        returns = normalization.update(returns, returns_to_go, 2, axis_name, mask=tr.valid)
        timestep = timestep.replace(reward=normalization.scale_rewards(returns, timestep.reward))
    return Normalizers(observations, returns), trajectory.replace(timestep=timestep)


def one_step_agent(config: ConfigDict, loss: Callable, num_updates: int, prediction_size: int = 0) -> Agent:
    """An agent whose `learn` is one gradient step of `loss(params, trajectory, unroll_fn=..., **config.agent)`
    (`prediction_size` as `network_agent`'s).

    With `agent.meta_gradient.learn`, some of those hyperparameters are
    meta-parameters, learned online (`meta_gradient_rl`).

    `loss` must be a mean over the trajectory's environments (axis 1), as the
    built-ins' are: an MLP's gradient is then taken over slices of them on CPU
    (`optimizer.chunked_grad`).
    """
    optimizer = make_optimizer(shared_fields.optimizer_settings(config), gradient_steps=num_updates)
    loss_fn = functools.partial(loss, unroll_fn=networks.unroll, **hyperparameters(config.agent))
    chunk_axis = 1 if slices_gradients(shared_fields.network_settings(config)) else None
    if meta_gradient_rl.learns(config.agent):  # Some hyperparameters are learned by meta-gradients.
        learn = meta_gradient_rl.make_learn(config, loss_fn, optimizer, num_updates, chunk_axis)
        agent = network_agent(config, optimizer, learn, prediction_size)
        return dataclasses.replace(agent, init=meta_gradient_rl.with_meta_state(agent.init, config.agent))

    def learn(state: LearnerState, trajectory: Any, key: chex.PRNGKey, axis_name=None) -> tuple[LearnerState, dict]:
        del key  # One gradient step on the whole trajectory draws nothing at random.
        return sgd_step(state, trajectory, loss_fn, optimizer, axis_name, chunk_axis)

    return network_agent(config, optimizer, learn, prediction_size)


def acts(network: NetworkSettings) -> tuple[Callable, Callable]:
    """`(act, greedy_act)` of the network `network` describes: sampling its policy head, or taking its mode."""
    base = feed_forward_act if network.core == "none" else act
    return functools.partial(base, choose=policy.sample), functools.partial(base, choose=policy.mode)


def act(
    params: networks.NetworkParams, timestep: TimeStep, state: Any, key: chex.PRNGKey, choose: Callable = policy.sample
) -> tuple[chex.Array, dict, Any]:
    """An action per environment `choose`n from the policy head (a sample, or the mode), and the core's next state;
    the head's outputs are the extras."""
    state, (outputs, _) = params.step(state, timestep.observation, timestep.step_type == FIRST)
    return choose(key, outputs), outputs, state


def feed_forward_act(
    params: networks.NetworkParams, observation: Any, key: chex.PRNGKey, choose: Callable = policy.sample
) -> tuple[chex.Array, dict]:
    """`act` of a network with no core: the policy of each observation alone."""
    _, (outputs, _) = params.step((), observation)
    return choose(key, outputs), outputs


def hyperparameters(agent_config: ConfigDict) -> dict:
    """The fields of `config.agent` that are the keyword arguments of the agent's loss."""
    others = {"name", meta_gradient_rl.FIELD, *NORMALIZATION_DEFAULTS}
    return {field: value for field, value in agent_config.items() if field not in others}


def validate_shared(config: ConfigDict) -> None:
    """Static checks of the fields every built-in actor-critic agent has."""
    field_checks.fraction(config, "agent.gamma", example=0.99)
    for field, example in (("agent.value_cost", 0.5), ("agent.entropy_cost", 0.01), ("agent.reward_clip", 1.0)):
        field_checks.number(config, field, example=example, at_least=0.0)
    for field in NORMALIZATION_DEFAULTS:
        field_checks.boolean(config, f"agent.{field}")
    if config.agent.normalize_observations and config.network.torso != "mlp":
        raise ConfigError(
            "agent.normalize_observations",
            f"the {config.network.torso} torso reads uint8 frames, which are not normalised per feature",
            "set --config.agent.normalize_observations=False, or use --config.network.torso=mlp",
        )
