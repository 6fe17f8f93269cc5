"""Networks of the off-policy continuous-control agents (SAC, TD3): actors in [-1, 1]^D and twin critics Q(s, a).

The agents reason in the unit box [-1, 1]^D, where the papers' formulas hold
as written: a tanh squashes an actor's output into it (Haarnoja et al. 2018,
Appendix C), TD3's noise and its clip are in its units (Fujimoto et al. 2018,
Section 5.3: sigma = 0.2, c = 0.5 for actions in [-1, 1]). Only the action
handed to the environment is mapped affinely to the spec's bounds
(`to_bounds`), and the actions the buffer returns are mapped back
(`from_bounds`), so one agent serves Pendulum's [-2, 2] and MuJoCo's [-1, 1].

Every network reads the flattened observation (`torsos.flatten_observation`)
through an MLP of `network.hidden_sizes` and `network.activation`
(`torsos.MLP`); a critic reads the action concatenated to it (Fujimoto et al.
2018, Appendix C). The twin critics are two independent networks, one call
gives both Q-values. (Not `nn.vmap`ped: a batched QR, which their orthogonal
initialisers would make, can deadlock XLA:CPU's one-thread pool.)
"""

import math
from collections.abc import Sequence
from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs
from flax import struct

from podracer.agents.models import policy
from podracer.agents.models.layers import dense
from podracer.agents.models.torsos import MLP, flatten_observation
from podracer.config.errors import ConfigError
from podracer.envs.actions import network_input

LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0  # A Gaussian actor's log-std is clipped into this range (as CleanRL's SAC).
NUM_CRITICS = 2  # Twin critics: the target takes the smaller of the two (clipped double Q).


@struct.dataclass
class Model:
    """A flax module's variables with the module itself (static), so that applying it needs nothing else."""

    module: nn.Module = struct.field(pytree_node=False)
    variables: Any

    def __call__(self, *inputs: Any) -> Any:
        return self.module.apply(self.variables, *inputs)


def _features(observation: Any) -> jnp.ndarray:
    return flatten_observation(network_input(observation))


class GaussianActor(nn.Module):
    """SAC's policy before squashing: `{"mean", "log_std"}` `[B, D]` of a diagonal Gaussian over u, a = tanh(u).

    The log-std depends on the state (its own output layer) and is clipped to
    [`LOG_STD_MIN`, `LOG_STD_MAX`].
    """

    action_size: int
    low: tuple[float, ...]  # The action spec's bounds, which `to_bounds` maps [-1, 1] onto.
    high: tuple[float, ...]
    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    layer_norm: bool = False

    @nn.compact
    def __call__(self, observation: Any) -> dict:
        features = MLP(self.hidden_sizes, self.activation, self.layer_norm)(_features(observation))
        log_std = dense(self.action_size, 0.01)(features)
        return {
            "mean": dense(self.action_size, 0.01)(features),
            "log_std": jnp.clip(log_std, LOG_STD_MIN, LOG_STD_MAX),
        }


class DeterministicActor(nn.Module):
    """TD3's policy mu(s) in [-1, 1]^D `[B, D]`: a tanh on an MLP (Fujimoto et al. 2018, Appendix C)."""

    action_size: int
    low: tuple[float, ...]
    high: tuple[float, ...]
    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    layer_norm: bool = False

    @nn.compact
    def __call__(self, observation: Any) -> jnp.ndarray:
        features = MLP(self.hidden_sizes, self.activation, self.layer_norm)(_features(observation))
        return jnp.tanh(dense(self.action_size, 0.01)(features))


class _Critic(nn.Module):
    hidden_sizes: Sequence[int]
    activation: str
    layer_norm: bool

    @nn.compact
    def __call__(self, observation: Any, action: jnp.ndarray) -> jnp.ndarray:
        inputs = jnp.concatenate([_features(observation), action.astype(jnp.float32)], axis=-1)
        return dense(1, 1.0)(MLP(self.hidden_sizes, self.activation, self.layer_norm)(inputs))[..., 0]


class StateValue(nn.Module):
    """V(s) `[B]`: IQL's value of a state, an MLP on the observation (Kostrikov et al. 2021)."""

    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    layer_norm: bool = False

    @nn.compact
    def __call__(self, observation: Any) -> jnp.ndarray:
        return dense(1, 1.0)(MLP(self.hidden_sizes, self.activation, self.layer_norm)(_features(observation)))[..., 0]


class TwinCritic(nn.Module):
    """Q_1(s, a) and Q_2(s, a), `[B, 2]`, of two critics with their own parameters, for actions in [-1, 1]^D."""

    hidden_sizes: Sequence[int] = (256, 256)
    activation: str = "relu"
    layer_norm: bool = False

    @nn.compact
    def __call__(self, observation: Any, action: jnp.ndarray) -> jnp.ndarray:
        critics = [_Critic(tuple(self.hidden_sizes), self.activation, self.layer_norm) for _ in range(NUM_CRITICS)]
        return jnp.stack([critic(observation, action) for critic in critics], axis=-1)


def network_fields(network: Any) -> dict:
    """The fields of these networks `config.network` sets: `hidden_sizes`, `activation` and `layer_norm` (on every
    hidden layer, as ReBRAC's networks have it)."""
    return {
        "hidden_sizes": tuple(network.hidden_sizes),
        "activation": network.activation,
        "layer_norm": network.layer_norm,
    }


def bounds(action_spec: Any) -> tuple[int, tuple[float, ...], tuple[float, ...]]:
    """`(D, low, high)` of a real-valued action vector with finite bounds; `ConfigError` for any other action spec."""
    is_vector = isinstance(action_spec, specs.BoundedArray) and len(action_spec.shape) == 1
    if not is_vector or not np.issubdtype(action_spec.dtype, np.floating):
        raise ConfigError(
            "env.name",
            f"SAC and TD3 act in a bounded vector of real numbers (a BoundedArray [D]), not {action_spec}",
            "use an environment with continuous actions (gymnax:Pendulum-v1, HalfCheetah-v4), or a discrete agent "
            "(dqn, ppo)",
        )
    low = np.broadcast_to(action_spec.minimum, action_spec.shape).astype(float)
    high = np.broadcast_to(action_spec.maximum, action_spec.shape).astype(float)
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high)) and np.all(high > low)):
        raise ConfigError(
            "env.name",
            f"the actions' bounds [{low}, {high}] are not finite, so [-1, 1] cannot be mapped onto them",
            "use an environment whose continuous actions have finite bounds",
        )
    return action_spec.shape[0], tuple(low.tolist()), tuple(high.tolist())


def to_bounds(unit_action: chex.Array, actor: nn.Module) -> chex.Array:
    """Actions in [-1, 1]^D as the environment takes them, in [low, high] (the actor's bounds)."""
    low, high = jnp.asarray(actor.low, jnp.float32), jnp.asarray(actor.high, jnp.float32)
    return low + 0.5 * (unit_action + 1.0) * (high - low)


def from_bounds(action: chex.Array, actor: nn.Module) -> chex.Array:
    """`to_bounds`'s inverse: the environment's actions in [-1, 1]^D."""
    low, high = jnp.asarray(actor.low, jnp.float32), jnp.asarray(actor.high, jnp.float32)
    return 2.0 * (action - low) / (high - low) - 1.0


def squashed_sample(outputs: dict, noise: chex.Array) -> tuple[chex.Array, chex.Array]:
    """`(a, log pi(a))`: a = tanh(u), u = mean + std * noise, reparameterised (Haarnoja et al. 2018, eq. 10).

    log pi(a|s) = log N(u; mean, std) - sum_i log(1 - tanh(u_i)^2) (Appendix C, eq. 21), with
    log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), which stays finite where tanh(u) rounds to +-1.
    """
    chex.assert_equal_shape([outputs["mean"], noise])
    u = outputs["mean"] + jnp.exp(outputs["log_std"]) * noise
    log_det = 2.0 * (math.log(2.0) - u - jax.nn.softplus(-2.0 * u))
    return jnp.tanh(u), policy.log_prob(outputs, u) - jnp.sum(log_det, axis=-1)


def init_model(key: chex.PRNGKey, module: nn.Module, observation_spec: Any, action_size: int | None = None) -> Model:
    """Fresh weights for an actor (reads observations) or, given `action_size`, a critic (and actions)."""
    observation = jax.tree.map(lambda spec: jnp.zeros((1,) + spec.shape, spec.dtype), observation_spec)
    inputs = (observation,) if action_size is None else (observation, jnp.zeros((1, action_size)))
    return Model(module, module.init(key, *inputs))
