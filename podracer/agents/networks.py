"""Actor-critic networks as flax modules, and `NetworkParams`: their weights together with their definition.

Observations may be arrays or nested dicts of arrays with one leading batch
axis. The MLP torso flattens every leaf and concatenates them in the pytree's
(sorted-key) order, so a nested observation needs no special casing anywhere
else. The pixel torsos (`NatureCNN`, `ImpalaResNet`) take one uint8 array
`[N, C, H, W]`, a channels-first frame stack as envpool's Atari returns it,
which `preprocess_pixels` turns into float NHWC in [0, 1]. Initialisation
follows the PPO implementation details of Huang et al. (2022): orthogonal
weights with gain sqrt(2) in the torso (dense and convolutional layers alike),
0.01 for the policy head and 1 for the value head, zero biases.
"""

import math
from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs
from flax import struct
from ml_collections import ConfigDict

from podracer.agents import normalization
from podracer.agents.trajectory import merge_leading_dims
from podracer.config.errors import ConfigError

_ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}
TORSOS = ("mlp", "nature_cnn", "impala_resnet", "muzero_resnet")  # The last is MuZero's model only.
ACTION_HEADS = ("categorical", "gaussian")


def dense(features: int, gain: float) -> nn.Dense:
    return nn.Dense(
        features,
        kernel_init=nn.initializers.orthogonal(gain),
        bias_init=nn.initializers.zeros,
        dot_general=dense_product,
    )


# From this many rows (network inputs in one product) up, `dense_product` takes the weight gradient as a plain
# product; below, it is `lax.dot_general` itself, so that small workloads keep their exact numbers.
TRANSPOSED_GRADIENT_ROWS = 1024


def dense_product(
    inputs: jnp.ndarray, kernel: jnp.ndarray, dimension_numbers, precision=None, **options
) -> jnp.ndarray:
    """`inputs [..., in] @ kernel [in, out]`, the product `nn.Dense` asks of its `dot_general`, differentiated so that
    XLA:CPU computes the weight gradient of a big batch on its fast path.

    Autodiff's weight gradient `inputs^T @ d_output` contracts the batch axis of
    both operands, a form XLA:CPU leaves to a generic kernel rather than to its
    matrix library. Materialising a transpose first (kept apart by optimisation
    barriers) makes it a plain product, faster even with the copy. The copy is
    of the narrower operand: `inputs^T` where the layer widens (on the 2-core
    CI machine, one thread, 1,088 rows, 137 us against 93 us for the 64 x 64
    layer; actor-critic's whole gradient step on Catch is 1.15x as fast), and
    `d_output^T`, the product then transposed, where it narrows: a 16-unit
    layer over flattened 84x84x4 frames, 1,344 rows, forward and gradient,
    takes 66-68 ms against 72-85 ms with autodiff's gradient and 88-99 ms
    copying its 152 MB of inputs.
    Other platforms differentiate as usual.

    Below `TRANSPOSED_GRADIENT_ROWS` rows (the shape is static, so this is
    decided while tracing) it is `lax.dot_general` with autodiff's gradient,
    although the plain product is faster there too (1.09x at 136 rows, 1.13x at
    672): the sums' other order changes float rounding, and on fragile tasks
    rounding decides which seeds end above a threshold. With the plain product
    everywhere, Sebulba IMPALA on CartPole (672 rows per step) ended seeds 1 and
    3 at 350 and 449 instead of 500; small workloads, the seed tables measured
    on them and the learning tests' seeds keep their numbers this way.
    """
    if math.prod(inputs.shape[:-1]) < TRANSPOSED_GRADIENT_ROWS:
        return jax.lax.dot_general(inputs, kernel, dimension_numbers, precision=precision, **options)
    return _product(inputs, kernel)  # `Dense`'s dimension numbers: the last axis of inputs with the kernel's first.


@jax.custom_vjp
def _product(inputs: jnp.ndarray, kernel: jnp.ndarray) -> jnp.ndarray:
    return jnp.matmul(inputs, kernel)


def _product_forward(inputs, kernel):
    return _product(inputs, kernel), (inputs, kernel)


def _product_backward(residuals, d_output):
    # Through `jax.vjp`, so that a cotangent is summed over the device axes it varies along and its primal does not,
    # as autodiff's own transposes do (under `shard_map`, with replicated inputs and per-device parameters).
    inputs, kernel = residuals
    _, inputs_vjp = jax.vjp(lambda x: x @ kernel, inputs)
    rows, d_rows = inputs.reshape(-1, inputs.shape[-1]), d_output.reshape(-1, d_output.shape[-1])
    if rows.shape[1] <= d_rows.shape[1]:  # Copy the narrower operand: here the inputs, for `rows^T @ d_rows`.
        rows_t = _held_on_cpu(rows.T)
        _, kernel_vjp = jax.vjp(lambda w: rows_t.T @ w, kernel)
        return inputs_vjp(d_output)[0], kernel_vjp(d_rows)[0]
    # Wide inputs (flattened frames): `(d_rows^T @ rows)^T`, transposing the small gradient after the product.
    _, kernel_t_vjp = jax.vjp(lambda w_t: w_t @ rows.T, kernel.T)
    d_kernel_t = kernel_t_vjp(_held_on_cpu(d_rows.T))[0]
    return inputs_vjp(d_output)[0], _held_on_cpu(d_kernel_t).T


def _held_on_cpu(x: jnp.ndarray) -> jnp.ndarray:
    """`x`, materialised on CPU: an optimisation barrier keeps XLA from folding a transpose back into a product."""
    return jax.lax.platform_dependent(x, cpu=jax.lax.optimization_barrier, default=lambda x: x)


_product.defvjp(_product_forward, _product_backward)


def conv(features: int, kernel: int, stride: int, padding: str) -> nn.Conv:
    return nn.Conv(
        features,
        (kernel, kernel),
        strides=(stride, stride),
        padding=padding,
        kernel_init=nn.initializers.orthogonal(np.sqrt(2)),
        bias_init=nn.initializers.zeros,
    )


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
    hidden_sizes: Sequence[int]
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        for size in self.hidden_sizes:
            x = _ACTIVATIONS[self.activation](dense(size, np.sqrt(2))(x))
        return x


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


class ActorCritic(nn.Module):
    """Policy outputs (a `policy` head's dict) and the state value `[N]`, from a torso chosen by `torso`.

    `action_head` "categorical": `{"logits": [N, action_size]}`; "gaussian": a
    diagonal Gaussian `{"mean": [N, action_size], "log_std": [N, action_size]}`
    whose log-std is one learned vector, independent of the state and starting
    at 0, as in CleanRL's and PureJaxRL's continuous PPO.
    Torsos, `torso` one of `TORSOS`: `"mlp"`, an MLP of `hidden_sizes` and
    `activation` over the flattened observation; with `shared_torso=False` the
    policy and the value have separate torsos, as in the standard PPO set-up
    for classic control and MuJoCo. `"nature_cnn"` (Mnih et al. 2015) and
    `"impala_resnet"` (Espeholt et al. 2018, configured by `channels`,
    `num_blocks`, `hidden_size`): pixel torsos over uint8 `[N, C, H, W]`
    frames. Policy and value always share a pixel torso, as in both papers;
    `shared_torso=False` is rejected for them rather than ignored.
    """

    action_size: int
    action_head: str = "categorical"
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    shared_torso: bool = True
    torso: str = "mlp"
    channels: Sequence[int] = (16, 32, 32)
    num_blocks: int = 2
    hidden_size: int = 256

    @nn.compact
    def __call__(self, observation: Any) -> tuple[dict, jnp.ndarray]:
        if self.torso == "mlp":
            features = flatten_observation(observation)
            policy_features = MLP(self.hidden_sizes, self.activation)(features)
            value_features = policy_features if self.shared_torso else MLP(self.hidden_sizes, self.activation)(features)
        else:
            torso = _pixel_torso(self)
            if not self.shared_torso:
                raise ValueError(f"torso {self.torso!r} is shared by policy and value; set shared_torso=True.")
            policy_features = value_features = torso(preprocess_pixels(observation))
        head = dense(self.action_size, 0.01)(policy_features)
        value = dense(1, 1.0)(value_features)[..., 0]
        if self.action_head == "categorical":
            return {"logits": head}, value
        if self.action_head != "gaussian":
            raise ValueError(f"Unknown action head {self.action_head!r}; choose one of {ACTION_HEADS}.")
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_size,))
        return {"mean": head, "log_std": jnp.broadcast_to(log_std, head.shape)}, value


class QNetwork(nn.Module):
    """Action values `[N, action_size]` (Mnih et al. 2015), on the torsos `ActorCritic` has (`torso` one of `TORSOS`)."""

    action_size: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "relu"
    torso: str = "mlp"
    channels: Sequence[int] = (16, 32, 32)
    num_blocks: int = 2
    hidden_size: int = 256

    @nn.compact
    def __call__(self, observation: Any) -> jnp.ndarray:
        if self.torso == "mlp":
            features = MLP(self.hidden_sizes, self.activation)(flatten_observation(observation))
        else:
            features = _pixel_torso(self)(preprocess_pixels(observation))
        return dense(self.action_size, 1.0)(features)


def _pixel_torso(network: ActorCritic | QNetwork) -> nn.Module:
    """The pixel torso `network.torso` names; called inside the network's `__call__`, so it is its child."""
    if network.torso not in TORSOS:
        raise ValueError(f"Unknown torso {network.torso!r}; choose one of {TORSOS}.")
    if network.torso == "nature_cnn":
        return NatureCNN()
    return ImpalaResNet(tuple(network.channels), network.num_blocks, network.hidden_size)


@struct.dataclass
class NetworkParams:
    """A network's weights together with its (static) definition, so that applying it needs nothing else.

    The flax module travels as static pytree data (as modules do in Equinox),
    so an agent's `act` and `learn` work for whatever observation and action
    specs `init` was shown: one agent object serves any environment. With
    `observation_statistics` (the acting parameters of an agent that
    normalises observations) `apply` normalises raw observations first, with
    the function `learn` applies to the trajectory (`normalization`).
    """

    module: nn.Module = struct.field(pytree_node=False)
    variables: Any
    observation_statistics: normalization.RunningStatistics | None = None

    def apply(self, observation: Any) -> Any:
        if self.observation_statistics is not None:
            observation = normalization.normalize_observation(self.observation_statistics, observation)
        return self.module.apply(self.variables, observation)


def apply(params: NetworkParams, observation: Any) -> Any:
    """`params.apply(observation)`, as a function for the losses' `apply_fn`."""
    return params.apply(observation)


def apply_merged(apply_fn: Callable, params: Any, observation: Any, leading_shape: tuple) -> tuple:
    """Policy outputs and values for observations with several leading axes (e.g. `[T + 1, B]`), in one pass."""
    outputs, values = apply_fn(params, merge_leading_dims(observation, len(leading_shape)))
    outputs = jax.tree.map(lambda x: x.reshape(leading_shape + x.shape[1:]), outputs)
    return outputs, values.reshape(leading_shape)


def make_network(network_config: ConfigDict, observation_spec: Any, action_spec: Any) -> ActorCritic:
    """The `ActorCritic` that `config.network` describes, for one environment's specs.

    Raises `ConfigError` where the network cannot read the observations: the
    pixel torsos need stacked uint8 frames `[C, H, W]` and serve the policy and
    the value together.
    """
    action_head, action_size = _action_head(action_spec)
    _check_torso(network_config, observation_spec)
    if network_config.torso != "mlp" and not network_config.shared_torso:
        raise ConfigError(
            "network.shared_torso",
            f"the {network_config.torso} torso is shared by policy and value",
            "set --config.network.shared_torso=True",
        )
    return ActorCritic(
        action_size=action_size,
        action_head=action_head,
        shared_torso=network_config.shared_torso,
        **_torso_fields(network_config),
    )


def make_q_network(network_config: ConfigDict, observation_spec: Any, action_spec: Any) -> QNetwork:
    """The `QNetwork` that `config.network` describes (`shared_torso` does not apply), for one environment's specs."""
    if not isinstance(action_spec, specs.DiscreteArray):
        raise ConfigError(
            "env.name",
            f"action values need a finite set of actions (a DiscreteArray), not {action_spec}",
            "use an environment with discrete actions, or an actor-critic agent (ppo, impala)",
        )
    _check_torso(network_config, observation_spec)
    return QNetwork(action_size=action_spec.num_values, **_torso_fields(network_config))


def _torso_fields(network_config: ConfigDict) -> dict:
    return {
        "hidden_sizes": tuple(network_config.hidden_sizes),
        "activation": network_config.activation,
        "torso": network_config.torso,
        "channels": tuple(network_config.channels),
        "num_blocks": network_config.num_blocks,
        "hidden_size": network_config.hidden_size,
    }


def _check_torso(network_config: ConfigDict, observation_spec: Any) -> None:
    """Raises `ConfigError` where a torso cannot read the observations, or is not one of this network's."""
    if network_config.torso == "muzero_resnet":
        raise ConfigError(
            "network.torso",
            "'muzero_resnet' is the MuZero agent's model (representation, dynamics, prediction)",
            "choose impala_resnet or nature_cnn, or use --config.agent.name=muzero",
        )
    check_reads_observations(network_config, observation_spec)


def check_reads_observations(network_config: ConfigDict, observation_spec: Any) -> None:
    """Raises `ConfigError` where a pixel torso is asked to read anything but stacked uint8 frames `[C, H, W]`."""
    if network_config.torso == "mlp":
        return
    shape, dtype = getattr(observation_spec, "shape", None), getattr(observation_spec, "dtype", None)
    if shape is None or len(shape) != 3 or dtype != np.uint8:
        raise ConfigError(
            "network.torso",
            f"{network_config.torso!r} reads stacked uint8 frames [C, H, W], but "
            f"the environment observes {shape} {dtype}",
            "use --config.network.torso=mlp",
        )


def _action_head(action_spec: Any) -> tuple[str, int]:
    """The policy head an action spec calls for and its size: categorical over n, or Gaussian over D reals."""
    if isinstance(action_spec, specs.DiscreteArray):
        return "categorical", action_spec.num_values
    shape, dtype = getattr(action_spec, "shape", None), getattr(action_spec, "dtype", None)
    if isinstance(action_spec, specs.Array) and len(shape) == 1 and np.issubdtype(dtype, np.floating):
        return "gaussian", shape[0]
    raise ConfigError(
        "env.name",
        f"the actor-critic agents act in a DiscreteArray or a float vector (BoundedArray [D]), not {action_spec}",
        "use an environment with one of those action specs",
    )


def init_params(key: jax.Array, network_config: ConfigDict, observation_spec: Any, action_spec: Any) -> NetworkParams:
    """Fresh weights for the actor-critic network `config.network` describes, for these specs."""
    return init_module(key, make_network(network_config, observation_spec, action_spec), observation_spec)


def init_module(key: jax.Array, module: nn.Module, observation_spec: Any) -> NetworkParams:
    """Fresh weights for `module`, initialised on one dummy observation of `observation_spec`."""
    dummy = jax.tree.map(lambda spec: jnp.zeros((1,) + spec.shape, spec.dtype), observation_spec)
    return NetworkParams(module, module.init(key, dummy))
