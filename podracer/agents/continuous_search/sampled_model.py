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
"""

from typing import Any

import jax.numpy as jnp
from dm_env import specs

from podracer.agents.models import continuous_networks as cn
from podracer.agents.models import support
from podracer.agents.models.muzero_model import MLPModel
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.models.torsos import check_reads_observations
from podracer.config.errors import ConfigError


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
        mean, log_std = jnp.split(self.policy_head(features), 2, axis=-1)
        policy = {"mean": mean, "log_std": jnp.clip(log_std, cn.LOG_STD_MIN, cn.LOG_STD_MAX)}
        return policy, self.value_head(features)


def make_model(network: NetworkSettings, observation_spec: Any, action_spec: Any, support_size: int) -> SampledModel:
    """The model `network` describes for one environment's specs; `ConfigError` where it cannot serve them."""
    if network.torso != "mlp":
        raise ConfigError(
            "network.torso",
            f"Sampled MuZero's model reads vector observations through MLPs, not a {network.torso!r} torso",
            "set --config.network.torso=mlp",
        )
    check_reads_observations(network.torso, observation_spec)
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


def refuse_discrete(config: Any, env: Any) -> None:
    """The registry's `check_environment`: Sampled MuZero samples continuous actions; MuZero searches discrete ones."""
    if isinstance(env.action_spec(), specs.DiscreteArray):
        raise ConfigError(
            "env.name",
            f"{config.env.name} has discrete actions: Sampled MuZero samples from a Gaussian over continuous ones",
            "search every discrete action with --config.agent.name=muzero, or use an environment with continuous "
            "actions (gymnax:Pendulum-v1)",
        )
