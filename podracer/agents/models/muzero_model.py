"""MuZero's learned model: representation, dynamics and prediction functions as one flax module.

Schrittwieser et al. (2020), "Mastering Atari, Go, Chess and Shogi by Planning
with a Learned Model", Section 3 and Appendix F:

- representation h: observation -> latent state s^0;
- dynamics g: (s^{k-1}, a^k) -> (s^k, reward logits r^k);
- prediction f: s^k -> (policy logits p^k, value logits v^k).

Rewards and values are logits over the categorical support of
`podracer.agents.models.support`. Every latent state is scaled to [0, 1] by its own
minimum and maximum (Appendix G), which keeps the dynamics' inputs in range
however long the model is unrolled.

Two models, chosen by `network.torso`:
- `"mlp"` (vector observations): each function is an MLP of
  `network.hidden_sizes`; the latent state has `network.hidden_size` units;
  the dynamics read the latent state and the action's encoding
  (`encode_action`: a one-hot here; Sampled MuZero's model for continuous
  actions, `podracer.agents.continuous_search.sampled_model`, overrides it
  and the policy head).
- `"muzero_resnet"` (stacked uint8 frames `[C, H, W]`): the Atari network of
  Appendix F, narrower by default. The representation downsamples 84x84 to
  6x6 (convolutions of stride 2 to `network.channels[0]` and
  `network.channels[1]` features, then two average poolings of stride 2, with
  `network.num_blocks` residual blocks after each but the last); the dynamics
  read the latent planes and one plane per action (one-hot); every head is a
  1x1 convolution, then dense `network.hidden_size` and the output.
"""

from collections.abc import Sequence
from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

from podracer.agents.models import support
from podracer.agents.models.layers import conv, dense
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.models.networks import NetworkParams
from podracer.agents.models.torsos import (
    MLP,
    ResidualBlock,
    check_reads_observations,
    flatten_observation,
    preprocess_pixels,
)
from podracer.config.errors import ConfigError
from podracer.envs.actions import ACTION_MASK

MODELS = ("mlp", "muzero_resnet")
HEAD_GAIN = 0.01  # Small output layers: the first predictions are near uniform (policy) and near zero (value, reward).


def scale_latent(latent: jnp.ndarray) -> jnp.ndarray:
    """Each latent state minus its minimum, over its range (Schrittwieser et al. 2020, Appendix G): in [0, 1]."""
    axes = tuple(range(1, latent.ndim))
    low = jnp.min(latent, axis=axes, keepdims=True)
    high = jnp.max(latent, axis=axes, keepdims=True)
    return (latent - low) / jnp.maximum(high - low, 1e-5)


class MLPModel(nn.Module):
    """The model for vector observations: three MLPs (see the module docstring)."""

    POLICY_PARAMETERS = 1  # Outputs of the policy head per action (a logit each); a subclass may need more.

    action_size: int
    value_bins: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "relu"
    latent_size: int = 64

    def setup(self):
        self.representation = nn.Sequential([MLP(self.hidden_sizes, self.activation), dense(self.latent_size, 1.0)])
        self.dynamics_torso = MLP(self.hidden_sizes, self.activation)
        self.next_latent = dense(self.latent_size, 1.0)
        self.reward_head = dense(self.value_bins, HEAD_GAIN)
        self.prediction_torso = MLP(self.hidden_sizes, self.activation)
        self.policy_head = dense(self.action_size * self.POLICY_PARAMETERS, HEAD_GAIN)
        self.value_head = dense(self.value_bins, HEAD_GAIN)

    def represent(self, observation: Any) -> jnp.ndarray:
        return scale_latent(self.representation(flatten_observation(observation)))

    def encode_action(self, action: jnp.ndarray) -> jnp.ndarray:
        """The dynamics' action input `[N, A]`: a one-hot of each action index `[N]`."""
        return jax.nn.one_hot(action, self.action_size)

    def dynamics(self, latent: jnp.ndarray, action: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        features = self.dynamics_torso(jnp.concatenate([latent, self.encode_action(action)], axis=-1))
        return scale_latent(self.next_latent(features)), self.reward_head(features)

    def predict(self, latent: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        features = self.prediction_torso(latent)
        return self.policy_head(features), self.value_head(features)

    def __call__(self, observation: Any, action: jnp.ndarray) -> tuple:
        """Every function once, so that `init` creates all the weights."""
        next_latent, reward = self.dynamics(self.represent(observation), action)
        return self.predict(next_latent), reward


class ConvHead(nn.Module):
    """A 1x1 convolution to few planes, then dense `hidden_size` and the `outputs` (Appendix F's heads)."""

    outputs: int
    hidden_size: int
    planes: int = 16

    @nn.compact
    def __call__(self, latent: jnp.ndarray) -> jnp.ndarray:
        x = nn.relu(conv(self.planes, 1, 1, "SAME")(latent)).reshape(latent.shape[0], -1)
        x = nn.relu(dense(self.hidden_size, np.sqrt(2))(x))
        return dense(self.outputs, HEAD_GAIN)(x)


def _blocks(count: int) -> nn.Sequential:
    return nn.Sequential([ResidualBlock() for _ in range(count)]) if count else (lambda x: x)


class ResNetModel(nn.Module):
    """The model for stacked frames: Appendix F's residual network (see the module docstring)."""

    action_size: int
    value_bins: int
    channels: Sequence[int] = (32, 64)
    num_blocks: int = 2
    hidden_size: int = 128

    def setup(self):
        first, second = self.channels
        self.downsample_first = conv(first, 3, 2, "SAME")
        self.first_blocks = _blocks(self.num_blocks)
        self.downsample_second = conv(second, 3, 2, "SAME")
        self.second_blocks = _blocks(self.num_blocks)
        self.pooled_blocks = _blocks(self.num_blocks)
        self.dynamics_input = conv(second, 3, 1, "SAME")
        self.dynamics_blocks = _blocks(self.num_blocks)
        self.reward_head = ConvHead(self.value_bins, self.hidden_size)
        self.prediction_blocks = _blocks(self.num_blocks)
        self.policy_head = ConvHead(self.action_size, self.hidden_size)
        self.value_head = ConvHead(self.value_bins, self.hidden_size)

    def represent(self, observation: jnp.ndarray) -> jnp.ndarray:
        x = nn.relu(self.downsample_first(preprocess_pixels(observation)))
        x = nn.relu(self.downsample_second(self.first_blocks(x)))
        x = nn.avg_pool(self.second_blocks(x), (3, 3), strides=(2, 2), padding="SAME")
        x = nn.avg_pool(self.pooled_blocks(x), (3, 3), strides=(2, 2), padding="SAME")
        return scale_latent(x)

    def dynamics(self, latent: jnp.ndarray, action: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        planes = jnp.broadcast_to(
            jax.nn.one_hot(action, self.action_size)[:, None, None, :], latent.shape[:3] + (self.action_size,)
        )
        x = nn.relu(self.dynamics_input(jnp.concatenate([latent, planes], axis=-1)))
        x = self.dynamics_blocks(x)
        return scale_latent(x), self.reward_head(x)

    def predict(self, latent: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        x = self.prediction_blocks(latent)
        return self.policy_head(x), self.value_head(x)

    def __call__(self, observation: jnp.ndarray, action: jnp.ndarray) -> tuple:
        next_latent, reward = self.dynamics(self.represent(observation), action)
        return self.predict(next_latent), reward


def make_model(
    network: NetworkSettings, observation_spec: Any, action_spec: Any, support_size: int
) -> MLPModel | ResNetModel:
    """The model `network` describes for one environment's specs; `ConfigError` where it cannot serve them."""
    if not isinstance(action_spec, specs.DiscreteArray):
        raise ConfigError(
            "env.name",
            f"MuZero searches over a finite set of actions (a DiscreteArray), not {action_spec}",
            "use an environment with discrete actions, or an actor-critic agent (ppo, impala)",
        )
    if network.torso not in MODELS:
        raise ConfigError(
            "network.torso",
            f"MuZero's model is 'mlp' or 'muzero_resnet', not {network.torso!r}",
            "set --config.network.torso=mlp for vector observations or muzero_resnet for frames",
        )
    if isinstance(observation_spec, dict) and ACTION_MASK in observation_spec:
        raise ConfigError(
            "env.name",
            "the environment masks illegal actions, which MuZero's learned model cannot respect in its search",
            "use an actor-critic agent (ppo, impala) or dqn, which mask them",
        )
    check_reads_observations(network.torso, observation_spec)
    bins = support.bins(support_size)
    if network.torso == "mlp":
        return MLPModel(
            action_size=action_spec.num_values,
            value_bins=bins,
            hidden_sizes=tuple(network.hidden_sizes),
            activation=network.activation,
            latent_size=network.hidden_size,
        )
    if len(network.channels) != 2:
        raise ConfigError(
            "network.channels",
            f"MuZero's ResNet downsamples twice, so it takes two widths, not {tuple(network.channels)}",
            'set --config.network.channels="(32, 64)"',
        )
    return ResNetModel(
        action_size=action_spec.num_values,
        value_bins=bins,
        channels=tuple(network.channels),
        num_blocks=network.num_blocks,
        hidden_size=network.hidden_size,
    )


INDEX_ACTION = jax.ShapeDtypeStruct((), jnp.int32)  # A discrete action: one index.


def init(key: chex.PRNGKey, model: nn.Module, observation_spec: Any, action: Any = INDEX_ACTION) -> NetworkParams:
    """Fresh weights for every function of `model`, from one dummy observation and one dummy `action` (its shape
    and dtype: an index, or Sampled MuZero's real vector)."""
    dummy = jax.tree.map(lambda spec: jnp.zeros((1,) + spec.shape, spec.dtype), observation_spec)
    return NetworkParams(model, model.init(key, dummy, jnp.zeros((1,) + action.shape, action.dtype)))


def represent(params: NetworkParams, observation: Any) -> jnp.ndarray:
    """Latent states `[N, ...]` of observations `[N, ...]`."""
    return params.module.apply(params.variables, observation, method="represent")


def dynamics(params: NetworkParams, latent: jnp.ndarray, action: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Next latent states and reward logits `[N, bins]` after actions `[N]` (`[N, D]` for continuous actions)."""
    return params.module.apply(params.variables, latent, action, method="dynamics")


def predict(params: NetworkParams, latent: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Policy logits `[N, A]` and value logits `[N, bins]` of latent states."""
    return params.module.apply(params.variables, latent, method="predict")
