"""C51, QR-DQN and IQN: DQN's replay, targets and acting, learning the distribution of returns rather than its mean.

Each is DQN (`q_learning.replayed_q_agent`: the device buffer, uniform or
prioritised; n-step windows cut at episode ends; double Q; a target network
copied or averaged; epsilon-greedy acting on the mean; R2D2's stored state and
burn-in with a recurrent core) with a `DistributionalQNetwork` and a
distributional loss (`distribution_losses`):

- `c51`: categorical over a fixed support, the projected n-step target, a
  cross-entropy (Bellemare et al. 2017, Algorithm 1);
- `qr_dqn`: quantiles at fixed fractions, the quantile Huber loss (Dabney et
  al. 2018a, eq. 10);
- `iqn`: quantiles at sampled fractions, the same loss over N sampled online
  and N' = N sampled target fractions (Dabney et al. 2018b, eq. 3).

The bootstrap is the distribution of the action that the online network
(double Q) or the target network finds best by its mean. With
`agent.munchausen` it is Munchausen's instead (Vieillard et al. 2020, eq. 3:
M-DQN's soft bootstrap over every action, and alpha tau clip(log pi(a|s), l_0,
0) added to each reward, pi the softmax of the target network's Q-values at
temperature tau), on any of the three (M-C51, M-QR-DQN, M-IQN).

A sequence's priority is its loss, as Rainbow prioritises by the KL loss
(Hessel et al. 2018, Section 3), through R2D2's max-mean mix over the trained
transitions of a recurrent sequence. `agent.dueling` splits the head into
value and advantage streams; `agent.noisy_sigma` > 0 makes its output layers
noisy (Fortunato et al. 2018), their weights drawn per environment at every
acting step (`noisy_act`) and per sampled row in learning. Rainbow is `c51`
with n-step returns, a prioritised buffer, double Q, dueling streams and
noisy layers on (`configs/anakin_minatar_breakout_rainbow.py`).
"""

import dataclasses
import functools
import math
from typing import Any

import chex
import jax
import jax.numpy as jnp
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import dqn, q_learning, shared_fields
from podracer.agents.learning import exploration, recurrent_replay, replay
from podracer.agents.models import networks
from podracer.agents.trajectory import transitions
from podracer.agents.value_distributions import distribution_losses as losses
from podracer.agents.value_distributions.distribution_heads import (
    HEAD_FIELDS,
    TAUS,
    DistributionalQNetwork,
    ValueDistribution,
    categorical_support,
)
from podracer.config import field_checks
from podracer.config.errors import ConfigError
from podracer.envs.actions import action_mask

KIND_OF_AGENT = {"c51": "categorical", "qr_dqn": "quantile", "iqn": "implicit"}

MUNCHAUSEN_DEFAULTS = {
    "munchausen": False,  # Munchausen's log-policy bonus and soft bootstrap (Vieillard et al. 2020).
    "munchausen_alpha": 0.9,  # alpha: the scale of the log-policy added to the rewards.
    "munchausen_temperature": 0.03,  # tau: the temperature of the target network's softmax policy.
    "munchausen_clip": -1.0,  # l_0: the lower clip of the log-policy bonus.
}

OWN_DEFAULTS = {
    "categorical": {"num_atoms": 51, "v_min": -10.0, "v_max": 10.0},  # The paper's Atari support.
    "quantile": {"num_atoms": 200, "kappa": 1.0},  # QR-DQN-1: 200 quantiles, the Huber threshold kappa 1.
    "implicit": {"num_atoms": 64, "acting_quantiles": 32, "embedding_size": 64, "kappa": 1.0},  # N = N' 64, K 32.
}


def defaults(kind: str) -> ConfigDict:
    """DQN's fields but its Huber threshold, then the head's, `dueling` and Munchausen's."""
    agent = dqn.defaults()
    del agent["huber_delta"]
    agent.update({**OWN_DEFAULTS[kind], "dueling": False, "noisy_sigma": 0.0, **MUNCHAUSEN_DEFAULTS})
    return agent


def validate(config: ConfigDict) -> None:
    dqn.validate_q_learning(config)
    agent = config.agent
    field_checks.integer(config, "agent.num_atoms", at_least=2, example=51)
    field_checks.boolean(config, "agent.dueling")
    field_checks.number(config, "agent.noisy_sigma", example=0.5, at_least=0.0)
    if agent.noisy_sigma > 0:
        shared_fields.require_feed_forward(config, "noisy layers draw a row's weights at each step of acting")
    if "v_min" in agent:
        for field in ("v_min", "v_max"):
            field_checks.number(config, f"agent.{field}", example=10.0 if field == "v_max" else -10.0)
        if agent.v_min >= agent.v_max:
            raise ConfigError(
                "agent.v_max",
                f"the support [{agent.v_min}, {agent.v_max}] is empty: v_max must be above v_min",
                "set --config.agent.v_max above agent.v_min, around the largest discounted return",
            )
    if "kappa" in agent:
        field_checks.number(config, "agent.kappa", example=1.0, at_least=0.0)
    for field in ("acting_quantiles", "embedding_size"):
        if field in agent:
            field_checks.integer(config, f"agent.{field}", at_least=1, example=OWN_DEFAULTS["implicit"][field])
    field_checks.boolean(config, "agent.munchausen")
    field_checks.fraction(config, "agent.munchausen_alpha", example=0.9)
    field_checks.number(config, "agent.munchausen_temperature", example=0.03, above=0.0)
    field_checks.number(config, "agent.munchausen_clip", example=-1.0, at_most=0.0)


@dataclasses.dataclass(frozen=True)
class LossSettings:
    """What the distributional loss reads of `config.agent` (`dqn.LossSettings` less the Huber threshold, and more)."""

    kind: str
    gamma: float
    n_step: int
    double_q: bool
    reward_clip: float
    burn_in: int
    sequence_length: int
    priority_eta: float
    num_atoms: int
    munchausen: bool
    munchausen_alpha: float
    munchausen_temperature: float
    munchausen_clip: float
    noisy_sigma: float = 0.0
    kappa: float = 1.0
    v_min: float = -10.0
    v_max: float = 10.0


def loss_settings(agent: ConfigDict) -> LossSettings:
    fields = {field.name for field in dataclasses.fields(LossSettings)} - {"kind"}
    return LossSettings(kind=KIND_OF_AGENT[agent.name], **{name: agent[name] for name in fields if name in agent})


def features_unroll(params: networks.NetworkParams, state: Any, observation: Any, first: chex.Array):
    """`unroll_fn(params, state, observation, first) -> (state, (features, legal actions))`: the torso and core."""
    return params.module.apply(params.variables, state, observation, first, method="features")


def distribution(
    params: networks.NetworkParams,
    features: tuple,
    sampled: bool,
    key: chex.PRNGKey | None = None,
    noise: jax.Array | None = None,
) -> ValueDistribution:
    """The head's `ValueDistribution` of `features` `(features, legal actions)`; IQN's fractions drawn from `key`,
    the noisy layers' noise from `noise` (a key per row; None: their mean)."""
    rngs = {TAUS: key} if sampled else {}
    return params.module.apply(params.variables, *features, sampled, noise, method="distribution", rngs=rngs)


def row_noise(key: chex.PRNGKey, rows: tuple, noisy: bool) -> jax.Array | None:
    """A key per row `[*rows]` for one draw of the noisy layers' weights per row; None without noisy layers."""
    return jax.random.split(key, math.prod(rows)).reshape(rows) if noisy else None


def first_steps(tree: Any, start: int = 0, stop: int | None = None) -> Any:
    """Every leaf's steps `start:stop` (the leading, time, axis); None stays None."""
    return jax.tree.map(lambda x: x[start:stop], tree)


def noisy_act(params: exploration.ActingParams, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """`exploration.act` through noisy layers: each environment's Q-values from a draw of the weights of its own,
    split from its key (Fortunato et al. 2018, Algorithm 1: noise resampled at every step), then epsilon-greedy."""
    noise, choice = jnp.moveaxis(jax.vmap(jax.random.split)(key), 1, 0)
    network, first = params.network, jnp.zeros((1, noise.shape[0]), bool)
    _, q_values = network.module.apply(
        network.variables, (), jax.tree.map(lambda x: x[None], observation), first, noise[None]
    )
    q_values = q_values[0]
    actions = exploration.epsilon_greedy(q_values, params.epsilon, choice, action_mask(observation))
    return actions, {"q_values": q_values}


def particles(target: ValueDistribution, settings: LossSettings) -> tuple[chex.Array, chex.Array]:
    """Every action's return distribution as particles `(values, weights)` `[T, B, A, M]`: C51's atoms with their
    probabilities, or the quantiles at weight 1/N each."""
    if settings.kind == "categorical":
        support = categorical_support(settings.num_atoms, settings.v_min, settings.v_max)
        probabilities = jax.nn.softmax(target.outputs, axis=-1)
        return jnp.broadcast_to(support, probabilities.shape), probabilities
    return target.outputs, jnp.full(target.outputs.shape, 1.0 / target.outputs.shape[-1])


def target_particles(trajectory, online: ValueDistribution, target: ValueDistribution, settings: LossSettings):
    """The n-step targets `(values, weights)` `[L, S, M]` of sampled sequences of L + n timesteps."""
    tr = transitions(trajectory, settings.gamma, settings.reward_clip)
    values, weights = particles(target, settings)
    rewards = tr.rewards
    if settings.munchausen:
        policy, log_policy = losses.munchausen_policy(target.q_values, settings.munchausen_temperature)
        rewards = rewards + losses.munchausen_bonus(
            log_policy[:-1],
            trajectory.action,
            settings.munchausen_alpha,
            settings.munchausen_temperature,
            settings.munchausen_clip,
        )
        values, weights = losses.munchausen_particles(
            values, weights, policy, log_policy, settings.munchausen_temperature
        )
    else:
        chooser = jax.lax.stop_gradient(online.q_values) if settings.double_q else target.q_values
        values, weights = losses.greedy_particles(values, weights, jnp.argmax(chooser, axis=-1))
    return losses.n_step_particles(rewards, tr.discounts, tr.lambdas(1.0), values, weights, settings.n_step)


def loss(
    params: Any, sample: replay.Sample, target_params: Any, key: chex.PRNGKey, settings: LossSettings
) -> tuple[chex.Array, tuple]:
    """The importance-weighted distributional loss of each sequence's trained transitions; aux `(metrics,
    priorities [S])`, as `dqn.loss`'s.

    The torso and core unroll once per network (the online one with R2D2's
    burn-in); the online head then gives the trained steps' distributions
    (IQN: at N sampled fractions) and every step's mean for the double-Q
    choice, and the target head every step's distribution (IQN: at N'
    sampled fractions) but the first's, which bootstraps nothing, unless
    Munchausen reads its policy there.
    """
    trajectory = recurrent_replay.from_stored_state(sample.trajectory)
    length = settings.sequence_length
    online_key, target_key, online_noise, target_noise = jax.random.split(key, 4)
    rows, noisy = trajectory.timestep.step_type.shape, settings.noisy_sigma > 0
    online_noise, target_noise = (row_noise(k, rows, noisy) for k in (online_noise, target_noise))
    features = recurrent_replay.online_q_values(params, trajectory, settings.burn_in, features_unroll)
    trained = distribution(
        params, first_steps(features, 0, length), True, online_key, first_steps(online_noise, 0, length)
    )
    online = distribution(params, features, False, None, online_noise)  # Its means choose the double-Q action.
    target_features = networks.unroll_trajectory(features_unroll, target_params, trajectory)
    first = 0 if settings.munchausen else 1
    target = distribution(
        target_params, first_steps(target_features, first), True, target_key, first_steps(target_noise, first)
    )
    target = jax.tree.map(lambda x: jnp.concatenate([x[:1], x]) if first else x, target)  # Step 0: never read.
    target_values, target_weights = target_particles(trajectory, online, target, settings)
    action = trajectory.action[:length]
    chosen = jnp.take_along_axis(trained.outputs, action[..., None, None], axis=-2)[..., 0, :]  # [L, S, N]
    if settings.kind == "categorical":
        support = categorical_support(settings.num_atoms, settings.v_min, settings.v_max)
        projected = losses.categorical_projection(target_values, target_weights, support)
        per_transition = losses.categorical_loss(chosen, projected)
    else:
        per_transition = losses.quantile_huber_loss(chosen, trained.taus, target_values, target_weights, settings.kappa)
    mask = recurrent_replay.trained_mask(trajectory, settings.burn_in, length)
    count = jnp.maximum(jnp.sum(mask), 1.0)
    total = jnp.sum(mask * sample.weights * per_transition) / count
    chosen_q = jnp.take_along_axis(trained.q_values, action[..., None], axis=-1)[..., 0]
    metrics = {"loss": total, "q_mean": jnp.sum(mask * chosen_q) / count}
    priorities = recurrent_replay.sequence_priorities(
        jax.lax.stop_gradient(per_transition), mask, settings.priority_eta
    )
    return total, (metrics, priorities)


def build(config: ConfigDict, num_updates: int) -> Agent:
    agent = config.agent
    head = {field: agent[field] for field in HEAD_FIELDS if field in agent}
    head["kind"] = KIND_OF_AGENT[agent.name]
    make_module = functools.partial(networks.make_q_network, module=DistributionalQNetwork, **head)
    settings = loss_settings(agent)
    act = noisy_act if agent.noisy_sigma > 0 else None
    return q_learning.replayed_q_agent(
        config, num_updates, make_module, lambda p, s, t, key: loss(p, s, t, key, settings), act
    )


for _name, _kind in KIND_OF_AGENT.items():
    registry.register(
        _name,
        defaults=functools.partial(defaults, _kind),
        build=build,
        validate=validate,
        config_defaults=shared_fields.REPLAY_CONFIG_DEFAULTS,
    )
