"""The parts `ActorCritic` and `QNetwork` are assembled from: torsos, recurrent cores and the heads' own layers.

Each function is called inside a flax module's compact `__call__` and reads the
module's fields (`torso`, `hidden_sizes`, `core`, ...), so one rule builds the
layers of every network. Features are `[T * B, F]`: a sequence of T steps of B
environments, its two leading axes merged.
"""

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from podracer.agents.models.cores import Core, initial_state
from podracer.agents.models.torsos import (
    MLP,
    VECTOR_TORSOS,
    MultiInput,
    flatten_observation,
    pixel_torso,
    preprocess_pixels,
)
from podracer.agents.trajectory import merge_leading_dims
from podracer.envs.actions import centralised_input, network_input


def torso_features(
    network: nn.Module, observation: Any, shared: bool, centralised_critic: bool = False
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The policy's and the value's features `[N, F]`: one torso when `shared`, else one each.

    The policy's torso reads the observation without what is the agent's alone
    (`network_input`: no action mask, game state or global state). A
    `centralised_critic`'s value torso reads the global state instead
    (`centralised_input`), as MAPPO's value function does (Yu et al. 2022).
    """
    policy_input = network_input(observation)
    if network.torso not in VECTOR_TORSOS:
        if not shared:
            raise ValueError(f"torso {network.torso!r} is shared by policy and value; set shared_torso=True.")
        features = pixel_torso(network)(preprocess_pixels(policy_input))
        return features, features
    if shared:
        features = _vector_torso(network, policy_input)
        return features, features
    value_input = centralised_input(observation) if centralised_critic else policy_input
    return _vector_torso(network, policy_input), _vector_torso(network, value_input)


def _vector_torso(network: nn.Module, observation: Any) -> jnp.ndarray:
    if network.torso == "multi_input":
        return MultiInput(tuple(network.channels), tuple(network.hidden_sizes), network.activation, network.layer_norm)(
            observation
        )
    return MLP(network.hidden_sizes, network.activation, network.layer_norm)(flatten_observation(observation))


def core_features(network: nn.Module, state: Any, features: jnp.ndarray, first: jnp.ndarray) -> tuple[Any, jnp.ndarray]:
    """The network's recurrent core over features `[T * B, F]` (the torso's, for T steps of B environments)."""
    if network.core == "none":
        return state, features
    sequence = features.reshape(first.shape + features.shape[1:])
    state, outputs = Core(network.core, network.core_size)(state, sequence, first)
    return state, merge_leading_dims(outputs, first.ndim)


def cores_of_heads(
    network: nn.Module, state: Any, features: tuple[jnp.ndarray, jnp.ndarray], first: jnp.ndarray, shared: bool
) -> tuple[Any, tuple[jnp.ndarray, jnp.ndarray]]:
    """The policy's and the value's features after the core: one core on a shared torso, feeding both heads; one
    core each after separate torsos, the state then the pair `(policy's, value's)` (`core_state`)."""
    if shared or network.core == "none":
        state, policy_features = core_features(network, state, features[0], first)
        return state, (policy_features, policy_features if shared else features[1])
    policy_state, policy_features = core_features(network, state[0], features[0], first)
    value_state, value_features = core_features(network, state[1], features[1], first)
    return (policy_state, value_state), (policy_features, value_features)


def core_state(core: str, size: int, shared: bool, batch_size: int) -> Any:
    """The recurrent state of `batch_size` fresh environments: `()` without a core, one core's state on a shared
    torso, the pair `(policy's, value's)` on separate ones (`cores_of_heads`)."""
    state = initial_state(core, size, batch_size)
    return state if shared or core == "none" else (state, state)


def head_torso(network: nn.Module, features: jnp.ndarray) -> jnp.ndarray:
    """The hidden layers of one head (`head_hidden_sizes`; none by default)."""
    if not network.head_hidden_sizes:
        return features
    return MLP(network.head_hidden_sizes, network.activation, network.layer_norm)(features)


def split_leading(tree: Any, leading: tuple) -> Any:
    """Leaves `[T * B, ...]` back to `[T, B, ...]`."""
    return jax.tree.map(lambda x: x.reshape(leading + x.shape[1:]), tree)
