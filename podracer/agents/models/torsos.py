"""The torsos the networks read observations with: an MLP over any nest of arrays, a multi-input torso over images
and vectors together, and two pixel torsos over frames.

Observations may be arrays or nested dicts of arrays with one leading batch
axis. The MLP torso flattens every leaf and concatenates them in the pytree's
(sorted-key) order, so a nested observation needs no special casing anywhere
else. The multi-input torso (`MultiInput`) does the same for vectors but reads
every channels-last image leaf `[N, H, W, C]` (Craftax's and POPGym Arcade's
pixels, Jumanji's and XLand-MiniGrid's grids) with a small convolutional
network first. An action mask or a game's state in the observation
(`podracer.envs.actions`) is not read by any torso: the networks take them
out first. The pixel torsos (`NatureCNN`, `ImpalaResNet`) take one uint8 array
`[N, C, H, W]`, a channels-first frame stack as envpool's Atari returns it,
which `preprocess_pixels` turns into float NHWC in [0, 1]. Their layers have
orthogonal weights with gain sqrt(2) (`podracer.agents.models.layers`). The heads on
top, and the networks they make, are `podracer.agents.models.networks`'s.
"""

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from podracer.agents.models.layers import conv, dense
from podracer.config.errors import ConfigError

_ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "swish": nn.swish}  # swish: x sigmoid(x), rejax's choice.
TORSOS = ("mlp", "multi_input", "nature_cnn", "impala_resnet", "muzero_resnet")  # The last is MuZero's model only.
VECTOR_TORSOS = ("mlp", "multi_input")  # Read any nest of arrays; the others read frames only.


def flatten_observation(observation: Any) -> jnp.ndarray:
    """`[N, ...]` leaves of any nesting -> one `[N, F]` float32 feature matrix."""
    leaves = jax.tree.leaves(observation)
    return jnp.concatenate([leaf.reshape(leaf.shape[0], -1).astype(jnp.float32) for leaf in leaves], axis=-1)


def preprocess_pixels(observation: jnp.ndarray) -> jnp.ndarray:
    """uint8 frames `[N, C, H, W]` -> float32 `[N, H, W, C]` in [0, 1], the layout flax's `Conv` expects.

    The one place pixels are converted; anything other than a rank-4 uint8 array is
    rejected rather than guessed at, since a float or channels-last input would
    otherwise be silently misread.
    """
    if getattr(observation, "dtype", None) != jnp.uint8 or getattr(observation, "ndim", None) != 4:
        got = jax.tree.map(lambda leaf: f"{leaf.dtype}{list(leaf.shape)}", observation)
        raise ValueError(f"pixel torsos take one uint8 array of frames [N, C, H, W]; got {got}")
    return jnp.transpose(observation, (0, 2, 3, 1)).astype(jnp.float32) / 255.0


class MLP(nn.Module):
    """Dense layers of `hidden_sizes`, each followed by `activation`; with `layer_norm`, by LayerNorm (Ba et al. 2016)
    first, as PQN's Q-network normalises every hidden layer (Gallici et al. 2025, Section 4)."""

    hidden_sizes: Sequence[int]
    activation: str = "tanh"
    layer_norm: bool = False

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        for size in self.hidden_sizes:
            x = _normalized(dense(size, np.sqrt(2))(x), self.layer_norm)
            x = _ACTIVATIONS[self.activation](x)
        return x


def _normalized(x: jnp.ndarray, layer_norm: bool) -> jnp.ndarray:
    """`x`, through LayerNorm over its last axis when `layer_norm` (called inside a module's `__call__`)."""
    return nn.LayerNorm()(x) if layer_norm else x


class GridCNN(nn.Module):
    """Convolutions over channels-last images `[N, H, W, C]`: per entry of `channels`, conv 3x3 SAME, ReLU,
    max-pool 2x2 stride 2; then flattened to `[N, F]`. Small enough for grid worlds (5x5) and cheap on 64x64 pixels.

    uint8 images are scaled to [0, 1]; other dtypes are read as they are. With
    `layer_norm`, LayerNorm over the channels of each convolution's output (per position, as purejaxql's PQN
    MinAtar network normalises) before the ReLU.
    """

    channels: Sequence[int] = (16, 32, 32)
    layer_norm: bool = False

    @nn.compact
    def __call__(self, image: jnp.ndarray) -> jnp.ndarray:
        x = image.astype(jnp.float32) / (255.0 if image.dtype == jnp.uint8 else 1.0)
        for channels in self.channels:
            x = nn.relu(_normalized(conv(channels, 3, 1, "SAME")(x), self.layer_norm))
            x = nn.max_pool(x, (2, 2), strides=(2, 2), padding="SAME")
        return x.reshape(x.shape[0], -1)


class MultiInput(nn.Module):
    """A torso over a dict of images and vectors: each image `[N, H, W, C]` through its own `GridCNN`, every other
    leaf flattened, all concatenated in sorted-key order and read by an MLP of `hidden_sizes`."""

    channels: Sequence[int] = (16, 32, 32)
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    layer_norm: bool = False  # In the convolutions and the MLP alike.

    @nn.compact
    def __call__(self, observation: Any) -> jnp.ndarray:
        features = [
            GridCNN(self.channels, self.layer_norm)(leaf)
            if leaf.ndim == 4
            else leaf.reshape(leaf.shape[0], -1).astype(jnp.float32)
            for leaf in jax.tree.leaves(observation)
        ]
        return MLP(self.hidden_sizes, self.activation, self.layer_norm)(jnp.concatenate(features, axis=-1))


class NatureCNN(nn.Module):
    """The DQN torso of Mnih et al. (2015, Nature): three VALID convolutions and a dense layer, all ReLU.

    Conv 32 8x8 stride 4, conv 64 4x4 stride 2, conv 64 3x3 stride 1, dense 512.
    Takes float images `[N, H, W, C]` (see `preprocess_pixels`); returns `[N, hidden_size]`.
    """

    hidden_size: int = 512

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        for features, kernel, stride in ((32, 8, 4), (64, 4, 2), (64, 3, 1)):
            x = nn.relu(conv(features, kernel, stride, "VALID")(x))
        x = x.reshape(x.shape[0], -1)
        return nn.relu(dense(self.hidden_size, np.sqrt(2))(x))


class ResidualBlock(nn.Module):
    """relu, conv 3x3, relu, conv 3x3, plus the input (Espeholt et al. 2018, Fig. 3)."""

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        channels = x.shape[-1]
        y = conv(channels, 3, 1, "SAME")(nn.relu(x))
        y = conv(channels, 3, 1, "SAME")(nn.relu(y))
        return x + y


class ImpalaResNet(nn.Module):
    """The IMPALA deep torso of Espeholt et al. (2018, Fig. 3 right).

    Per entry of `channels`: conv 3x3 SAME, max-pool 3x3 stride 2 SAME, then
    `num_blocks` residual blocks; then relu, flatten, dense `hidden_size`, relu.
    The paper's network is channels (16, 32, 32) with 2 blocks; its scaling
    experiments widen `channels` and deepen `num_blocks`.
    Takes float images `[N, H, W, C]` (see `preprocess_pixels`); returns `[N, hidden_size]`.
    """

    channels: Sequence[int] = (16, 32, 32)
    num_blocks: int = 2
    hidden_size: int = 256

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        for channels in self.channels:
            x = conv(channels, 3, 1, "SAME")(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            for _ in range(self.num_blocks):
                x = ResidualBlock()(x)
        x = nn.relu(x).reshape(x.shape[0], -1)
        return nn.relu(dense(self.hidden_size, np.sqrt(2))(x))


def pixel_torso(network: Any) -> nn.Module:
    """The pixel torso `network.torso` names, with its `channels`, `num_blocks` and `hidden_size`.

    Called inside the network's `__call__`, so that the torso is its child.
    """
    if network.torso not in TORSOS:
        raise ValueError(f"Unknown torso {network.torso!r}; choose one of {TORSOS}.")
    if network.torso == "nature_cnn":
        return NatureCNN()
    return ImpalaResNet(tuple(network.channels), network.num_blocks, network.hidden_size)


def check_reads_observations(torso: str, observation_spec: Any) -> None:
    """Raises `ConfigError` where `torso` cannot read the observations: a pixel torso anything but stacked uint8
    frames `[C, H, W]`, the multi-input torso a leaf of more than three axes."""
    if torso == "multi_input":
        too_deep = [spec.shape for spec in jax.tree.leaves(observation_spec) if len(spec.shape) > 3]
        if too_deep:
            raise ConfigError(
                "network.torso",
                f"'multi_input' reads vectors and images [H, W, C], but the environment observes {too_deep}",
                "use --config.network.torso=mlp, which flattens any observation",
            )
    if torso in VECTOR_TORSOS:
        return
    shape, dtype = getattr(observation_spec, "shape", None), getattr(observation_spec, "dtype", None)
    if shape is None or len(shape) != 3 or dtype != np.uint8:
        raise ConfigError(
            "network.torso",
            f"{torso!r} reads stacked uint8 frames [C, H, W], but the environment observes {shape} {dtype}",
            "use --config.network.torso=mlp",
        )
