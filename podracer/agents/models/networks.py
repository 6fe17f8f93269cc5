"""Actor-critic networks as flax modules, and `NetworkParams`: their weights together with their definition.

`ActorCritic` puts a policy head and a value head on a torso
(`podracer.agents.models.torsos`), `QNetwork` an action-value head; their output
layers are initialised with gain 0.01 (policy) and 1 (value, action values),
after the PPO implementation details of Huang et al. (2022). `make_network`
and `make_q_network` build them from a config's `NetworkSettings` for an
environment's specs, and `init_params` gives their first weights.
"""

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from dm_env import specs
from flax import struct

from podracer.agents.models import normalization
from podracer.agents.models.layers import dense
from podracer.agents.models.network_parts import (
    core_features,
    core_state,
    cores_of_heads,
    head_torso,
    split_leading,
    torso_features,
)
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.models.policy import head_for, mask_illegal
from podracer.agents.models.torsos import VECTOR_TORSOS, check_reads_observations
from podracer.agents.trajectory import Trajectory, merge_leading_dims
from podracer.config.errors import ConfigError
from podracer.envs.actions import action_mask
from podracer.envs.timestep import FIRST

ACTION_HEADS = ("categorical", "gaussian")


class ActorCritic(nn.Module):
    """Policy outputs (a `policy` head's dict) and state values over a sequence, from a torso chosen by `torso`.

    `__call__(state, observation, first)` reads observations `[T, B, ...]` and
    returns `(state, (outputs, value))`, outputs and values `[T, B, ...]`.
    `action_head` "categorical": `{"logits": [..., action_size]}`; "gaussian": a
    diagonal Gaussian `{"mean": [..., action_size], "log_std": [..., action_size]}`
    whose log-std is one learned vector, independent of the state and starting
    at 0, as in CleanRL's and PureJaxRL's continuous PPO.
    Torsos, `torso` one of `TORSOS`: `"mlp"`, an MLP of `hidden_sizes` and
    `activation` over the flattened observation (with `shared_torso=False`,
    one for the policy and one for the value, the standard PPO set-up for
    classic control and MuJoCo); `"multi_input"`, the same with a `GridCNN` of
    `channels` for each image leaf; the pixel torsos `"nature_cnn"` (Mnih et
    al. 2015) and `"impala_resnet"` (Espeholt et al. 2018; `channels`,
    `num_blocks`, `hidden_size`) over uint8 `[N, C, H, W]` frames, always
    shared by policy and value, as in both papers.
    A recurrent `core` ("lstm" or "gru", `cores.CORES`, of `core_size` units)
    runs over the torso's features, its state `state` `[B, ...]` starting
    afresh at every `first` `[T, B]` step; with "none" the state is `()` and
    every step is independent. Each head may have hidden layers of its own
    (`head_hidden_sizes`), as PureJaxRL's `ppo_rnn.py` network has after its GRU.
    An action mask in the observation masks the categorical head's logits (`policy.mask_illegal`).
    With `prediction_size` m > 0 the value head gives an LPG agent's prediction logits y(s) `[T, B, m]` instead.
    With `layer_norm` every hidden layer of the vector torsos and of the heads is followed by LayerNorm before its
    activation (`torsos.MLP`), as in PQN's Q-network (Gallici et al. 2025); the pixel torsos have none.
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
    core: str = "none"
    core_size: int = 256
    head_hidden_sizes: Sequence[int] = ()
    layer_norm: bool = False
    prediction_size: int = 0
    centralised_critic: bool = False

    @nn.compact
    def __call__(self, state: Any, observation: Any, first: jnp.ndarray) -> tuple[Any, tuple[dict, jnp.ndarray]]:
        leading = first.shape
        observation = merge_leading_dims(observation, len(leading))
        features = torso_features(self, observation, self.shared_torso, self.centralised_critic)
        state, (policy_features, value_features) = cores_of_heads(self, state, features, first, self.shared_torso)
        head = dense(self.action_size, 0.01)(head_torso(self, policy_features))
        value = dense(self.prediction_size or 1, 1.0)(head_torso(self, value_features))
        value = value if self.prediction_size else value[..., 0]
        if self.action_head == "categorical":
            outputs = {"logits": mask_illegal(head, action_mask(observation))}
        elif self.action_head == "gaussian":
            log_std = self.param("log_std", nn.initializers.zeros, (self.action_size,))
            outputs = {"mean": head, "log_std": jnp.broadcast_to(log_std, head.shape)}
        else:
            raise ValueError(f"Unknown action head {self.action_head!r}; choose one of {ACTION_HEADS}.")
        return state, split_leading((outputs, value), leading)


class QNetwork(nn.Module):
    """Action values `[T, B, action_size]` (Mnih et al. 2015) over a sequence, on `ActorCritic`'s torsos and cores.

    `__call__(state, observation, first) -> (state, q_values)`, as `ActorCritic`'s.
    """

    action_size: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "relu"
    torso: str = "mlp"
    channels: Sequence[int] = (16, 32, 32)
    num_blocks: int = 2
    hidden_size: int = 256
    core: str = "none"
    core_size: int = 256
    head_hidden_sizes: Sequence[int] = ()
    layer_norm: bool = False

    @nn.compact
    def __call__(self, state: Any, observation: Any, first: jnp.ndarray) -> tuple[Any, jnp.ndarray]:
        leading = first.shape
        observation = merge_leading_dims(observation, len(leading))
        features, _ = torso_features(self, observation, shared=True)
        state, features = core_features(self, state, features, first)
        q_values = mask_illegal(dense(self.action_size, 1.0)(head_torso(self, features)), action_mask(observation))
        return state, split_leading(q_values, leading)


@struct.dataclass
class NetworkParams:
    """A network's weights together with its (static) definition, so that applying it needs nothing else.

    The flax module travels as static pytree data (as modules do in Equinox),
    so an agent's `act` and `learn` work for whatever observation and action
    specs `init` was shown: one agent object serves any environment. With
    `observation_statistics` (the acting parameters of an agent that
    normalises observations) the network normalises raw observations first, with
    the function `learn` applies to the trajectory (`normalization`).
    """

    module: nn.Module = struct.field(pytree_node=False)
    variables: Any
    observation_statistics: normalization.RunningStatistics | None = None

    def unroll(self, state: Any, observation: Any, first: jnp.ndarray) -> tuple[Any, Any]:
        """`(state, outputs)` over a sequence: observations `[T, B, ...]`, `first` `[T, B]`, the state `[B, ...]`."""
        if self.observation_statistics is not None:
            observation = normalization.normalize_observation(self.observation_statistics, observation)
        return self.module.apply(self.variables, state, observation, first)

    def step(self, state: Any, observation: Any, first: jnp.ndarray | None = None) -> tuple[Any, Any]:
        """`(state, outputs)` for one step of B environments (observations `[B, ...]`, `first` `[B]`, None: no
        episode starts, as for a network with no core): what acting computes."""
        if first is None:
            first = jnp.zeros(jax.tree.leaves(observation)[0].shape[:1], bool)
        state, outputs = self.unroll(state, *jax.tree.map(lambda x: x[None], (observation, first)))
        return state, jax.tree.map(lambda x: x[0], outputs)


def unroll(params: NetworkParams, state: Any, observation: Any, first: jnp.ndarray) -> tuple[Any, Any]:
    """`params.unroll(state, observation, first)`, as a function for the losses' `unroll_fn`."""
    return params.unroll(state, observation, first)


def unroll_trajectory(unroll_fn: Callable, params: Any, trajectory: Trajectory) -> Any:
    """The network's outputs at every timestep of a trajectory `[T + 1, B]`, replayed from its initial state.

    The state starts afresh at every FIRST timestep, as it did while acting.
    """
    timestep = trajectory.timestep
    _, outputs = unroll_fn(params, trajectory.initial_state(), timestep.observation, timestep.step_type == FIRST)
    return outputs


def make_network(network: NetworkSettings, observation_spec: Any, action_spec: Any) -> ActorCritic:
    """The `ActorCritic` that `network` describes, for one environment's specs.

    Raises `ConfigError` where the network cannot read the observations: the
    pixel torsos need stacked uint8 frames `[C, H, W]` and serve the policy and
    the value together.
    """
    action_head, action_size = head_for(action_spec)
    _check_torso(network.torso, observation_spec)
    if network.torso not in VECTOR_TORSOS and not network.shared_torso:
        raise ConfigError(
            "network.shared_torso",
            f"the {network.torso} torso is shared by policy and value",
            "set --config.network.shared_torso=True",
        )
    return ActorCritic(action_size=action_size, action_head=action_head, **dataclasses.asdict(network))


def make_q_network(
    network: NetworkSettings, observation_spec: Any, action_spec: Any, module: type[nn.Module] = QNetwork, **head: Any
) -> nn.Module:
    """The `QNetwork` that `network` describes (`shared_torso` does not apply), for one environment's specs; or
    another `module` on the same torso and core fields, with fields of its own (`head`): a distributional one's."""
    if not isinstance(action_spec, specs.DiscreteArray):
        raise ConfigError(
            "env.name",
            f"action values need a finite set of actions (a DiscreteArray), not {action_spec}",
            "use an environment with discrete actions, or an actor-critic agent (ppo, impala)",
        )
    _check_torso(network.torso, observation_spec)
    fields = {name: value for name, value in dataclasses.asdict(network).items() if name != "shared_torso"}
    return module(action_size=action_spec.num_values, **fields, **head)


def _check_torso(torso: str, observation_spec: Any) -> None:
    """Raises `ConfigError` where a torso cannot read the observations, or is not one of this network's."""
    if torso == "muzero_resnet":
        raise ConfigError(
            "network.torso",
            "'muzero_resnet' is the MuZero agent's model (representation, dynamics, prediction)",
            "choose impala_resnet or nature_cnn, or use --config.agent.name=muzero",
        )
    check_reads_observations(torso, observation_spec)


def init_params(key: jax.Array, network: NetworkSettings, observation_spec: Any, action_spec: Any) -> NetworkParams:
    """Fresh weights for the actor-critic network `network` describes, for these specs."""
    return init_module(key, make_network(network, observation_spec, action_spec), observation_spec)


def init_module(key: jax.Array, module: nn.Module, observation_spec: Any) -> NetworkParams:
    """Fresh weights for `module` (an `ActorCritic` or a `QNetwork`), initialised on one dummy step of one environment."""
    dummy = jax.tree.map(lambda spec: jnp.zeros((1, 1) + spec.shape, spec.dtype), observation_spec)
    state = core_state(module.core, module.core_size, getattr(module, "shared_torso", True), 1)
    return NetworkParams(module, module.init(key, state, dummy, jnp.zeros((1, 1), bool)))


def network_state(network: NetworkSettings, batch_size: int) -> Any:
    """The recurrent state of `batch_size` fresh environments for the `ActorCritic` `network` describes: `()`
    without a core, a pair `(policy's, value's)` where each head has its own torso and core."""
    return core_state(network.core, network.core_size, network.shared_torso, batch_size)


def q_network_state(network: NetworkSettings, batch_size: int) -> Any:
    """The recurrent state of `batch_size` fresh environments for the `QNetwork` `network` describes (one core
    over one torso: `shared_torso` does not apply)."""
    return core_state(network.core, network.core_size, True, batch_size)
