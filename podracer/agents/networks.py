"""Actor-critic networks as flax modules; parameters stay plain pytrees.

Observations may be arrays or nested dicts of arrays with one leading batch
axis. The encoder flattens every leaf and concatenates them in the pytree's
(sorted-key) order, so a nested observation needs no special casing anywhere
else. Initialisation follows the PPO implementation details of Huang et al.
(2022): orthogonal weights with gain sqrt(2) in the torso, 0.01 for the policy
head and 1 for the value head, zero biases.
"""

from typing import Any, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

_ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}


def _dense(features: int, gain: float) -> nn.Dense:
    return nn.Dense(features, kernel_init=nn.initializers.orthogonal(gain), bias_init=nn.initializers.zeros)


def flatten_observation(observation: Any) -> jnp.ndarray:
    """`[N, ...]` leaves of any nesting -> one `[N, F]` float32 feature matrix."""
    leaves = jax.tree.leaves(observation)
    return jnp.concatenate([leaf.reshape(leaf.shape[0], -1).astype(jnp.float32) for leaf in leaves], axis=-1)


class MLP(nn.Module):
    hidden_sizes: Sequence[int]
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        for size in self.hidden_sizes:
            x = _ACTIVATIONS[self.activation](_dense(size, np.sqrt(2))(x))
        return x


class ActorCritic(nn.Module):
    """Policy logits `[N, A]` and state value `[N]` from an MLP torso.

    With `shared_torso=False` the policy and the value have separate torsos, as in
    the standard PPO set-up for classic control.
    """

    num_actions: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    shared_torso: bool = True

    @nn.compact
    def __call__(self, observation: Any) -> tuple[jnp.ndarray, jnp.ndarray]:
        features = flatten_observation(observation)
        policy_features = MLP(self.hidden_sizes, self.activation)(features)
        value_features = policy_features if self.shared_torso else MLP(self.hidden_sizes, self.activation)(features)
        logits = _dense(self.num_actions, 0.01)(policy_features)
        value = _dense(1, 1.0)(value_features)[..., 0]
        return logits, value
