"""Sampled MuZero's model: MuZero's MLP model (`muzero_model.MLPModel`) for a bounded vector of real actions.

Hubert et al. (2021), "Learning and Planning in Complex Action Spaces",
Section 4: the model is MuZero's, except that the prediction function's policy
is a distribution over continuous actions that can be sampled and evaluated,
and the dynamics read the action itself. Here the policy is a diagonal
Gaussian over u, squashed into the unit box by a = tanh(u) (as SAC's actor,
`continuous_networks`): the policy head gives its mean and log-std (clipped
to [`LOG_STD_MIN`, `LOG_STD_MAX`]); the dynamics read the action mapped from
the environment's bounds into [-1, 1]^D (`continuous_networks.from_bounds`),
so the actions acting hands the environment and the buffer hands back feed
the dynamics as they are.

Sampled AlphaZero's network (`PolicyValueNetwork`) is the prediction
function alone, on the observation rather than a latent state: its search
steps the environment itself, so it has nothing to represent or unroll.
"""

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax.numpy as jnp
from dm_env import specs

from podracer.agents.models import continuous_networks as cn
from podracer.agents.models import support
from podracer.agents.models.layers import dense
from podracer.agents.models.muzero_model import HEAD_GAIN, MLPModel
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.models.torsos import MLP, check_reads_observations, flatten_observation
from podracer.config.errors import ConfigError
from podracer.envs.actions import network_input


class SampledModel(MLPModel):
    """MuZero's MLP model whose `action_size` is D, the action vector's size, within the bounds `low`..`high`."""

    POLICY_PARAMETERS = 2  # A mean and a log-std per action dimension.

    low: tuple[float, ...] = ()
    high: tuple[float, ...] = ()

    def encode_action(self, action: jnp.ndarray) -> jnp.ndarray:
        """The dynamics' action input `[N, D]`: actions `[N, D]` in the environment's bounds, mapped into [-1, 1]."""
        return cn.from_bounds(action, self)

    def predict(self, latent: jnp.ndarray) -> tuple[dict, jnp.ndarray]:
        """The policy `{"mean", "log_std"}` `[N, D]` of u (a = tanh(u)) and the value logits `[N, bins]`."""
        features = self.prediction_torso(latent)
        return gaussian_policy(self.policy_head(features)), self.value_head(features)


def gaussian_policy(head_output: jnp.ndarray) -> dict:
    """The policy `{"mean", "log_std"}` `[N, D]` of a head's `[N, 2D]` outputs, the log-std clipped to
    [`LOG_STD_MIN`, `LOG_STD_MAX`]."""
    mean, log_std = jnp.split(head_output, 2, axis=-1)
    return {"mean": mean, "log_std": jnp.clip(log_std, cn.LOG_STD_MIN, cn.LOG_STD_MAX)}


class PolicyValueNetwork(nn.Module):
    """Sampled AlphaZero's network: an MLP on the observation (its entries for the agent alone left out), the
    policy `{"mean", "log_std"}` `[N, D]` of u (a = tanh(u)) and the value logits `[N, bins]`, as `SampledModel`'s
    prediction function; `low`..`high` are the action bounds `continuous_networks.to_bounds` maps onto."""

    action_size: int
    value_bins: int
    low: tuple[float, ...]
    high: tuple[float, ...]
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "relu"

    @nn.compact
    def __call__(self, observation: Any) -> tuple[dict, jnp.ndarray]:
        features = MLP(self.hidden_sizes, self.activation)(flatten_observation(network_input(observation)))
        policy = gaussian_policy(dense(self.action_size * SampledModel.POLICY_PARAMETERS, HEAD_GAIN)(features))
        return policy, dense(self.value_bins, HEAD_GAIN)(features)


def _mlp_torso(network: NetworkSettings, observation_spec: Any, agent: str) -> None:
    """`ConfigError` unless `network` is an MLP torso that reads these observations."""
    if network.torso != "mlp":
        raise ConfigError(
            "network.torso",
            f"{agent}'s network reads vector observations through MLPs, not a {network.torso!r} torso",
            "set --config.network.torso=mlp",
        )
    check_reads_observations(network.torso, network_input(observation_spec))


def make_model(network: NetworkSettings, observation_spec: Any, action_spec: Any, support_size: int) -> SampledModel:
    """The model `network` describes for one environment's specs; `ConfigError` where it cannot serve them."""
    _mlp_torso(network, observation_spec, "Sampled MuZero")
    size, low, high = cn.bounds(action_spec)
    return SampledModel(
        action_size=size,
        value_bins=support.bins(support_size),
        hidden_sizes=tuple(network.hidden_sizes),
        activation=network.activation,
        latent_size=network.hidden_size,
        low=low,
        high=high,
    )


def make_policy_value(
    network: NetworkSettings, observation_spec: Any, action_spec: Any, support_size: int
) -> PolicyValueNetwork:
    """Sampled AlphaZero's network for one environment's specs; `ConfigError` where it cannot serve them."""
    _mlp_torso(network, observation_spec, "Sampled AlphaZero")
    size, low, high = cn.bounds(action_spec)
    return PolicyValueNetwork(
        action_size=size,
        value_bins=support.bins(support_size),
        low=low,
        high=high,
        hidden_sizes=tuple(network.hidden_sizes),
        activation=network.activation,
    )


DISCRETE_COUNTERPARTS = {"sampled_muzero": "muzero", "sampled_alphazero": "alphazero"}


def refuse_discrete(config: Any, env: Any) -> None:
    """The registry's `check_environment`: the sampled searches sample continuous actions; MuZero and AlphaZero
    search discrete ones."""
    if isinstance(env.action_spec(), specs.DiscreteArray):
        name = config.agent.name
        raise ConfigError(
            "env.name",
            f"{config.env.name} has discrete actions: {name} samples from a Gaussian over continuous ones",
            f"search every discrete action with --config.agent.name={DISCRETE_COUNTERPARTS[name]}, or use an "
            "environment with continuous actions (gymnax:Pendulum-v1)",
        )
