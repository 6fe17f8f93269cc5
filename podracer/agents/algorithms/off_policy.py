"""What SAC and TD3 share: twin critics learned from replay, their loss, Polyak-averaged targets, the whole agent.

Both agents learn Q_1 and Q_2 (`continuous_networks.TwinCritic`) by
regression to one target per sampled transition (s, a, r, s'),

    y = r + gamma d v(s'),   J_Q = sum_i 1/2 E[(Q_i(s, a) - y)^2]

(Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications",
eqs. 5-6; Fujimoto et al. 2018, Algorithm 1), where d is the environment's
discount (0 at termination, 1 at a time limit) and v(s') is each agent's own
(`Rules.next_value`): SAC's soft value, TD3's smoothed target action's value,
both through the smaller of the two target critics (clipped double Q). Then
each agent improves its actor and whatever else it learns (`Rules.improve`),
and moves its targets towards the online networks by Polyak averaging,
theta' <- tau theta + (1 - tau) theta' (`agent.target_tau`).

Transitions come from the device replay loop (`podracer.agents.learning.replay`):
each `learn` call adds its rollout, then takes `replay_ratio` gradient steps
on batches of `batch_size` sequences of two timesteps (a transition), each
device sampling its own buffer, gradients averaged over devices. A prioritised
buffer's priority is the mean of the two critics' |TD error|. The noise of
each gradient step (SAC's sampled actions, TD3's target smoothing) is drawn
from the learner state's key (kept as its data), which each `learn` call
sets from its own key, and differs between devices like their samples.

The actor, the critics and SAC's temperature each have their own state of the
optimiser `config.optimizer` describes.
"""

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
from flax import struct
from ml_collections import ConfigDict

from podracer.agents.agent import Agent
from podracer.agents.algorithms import shared_fields
from podracer.agents.learning import replay
from podracer.agents.learning.optimizer import LearnerState, flat_vector, key_data, make_optimizer
from podracer.agents.models import continuous_networks as cn
from podracer.agents.trajectory import Trajectory, transitions
from podracer.config import field_checks
from podracer.config.errors import ConfigError
from podracer.devices import collectives
from podracer.devices.per_device import PerDevice


def defaults(offline: bool = False, **own: Any) -> ConfigDict:
    """`config.agent` of an off-policy continuous agent: the shared fields, then the agent's `own`; `offline`, of
    one that learns from a dataset, without the replay buffer's fields (`batch_size` is then the whole batch of
    every gradient step, over all devices)."""
    replay_fields = {**shared_fields.REPLAY_DEFAULTS, "buffer_size": 100_000, "min_replay_size": 5_000}
    shared = {
        "gamma": 0.99,
        "reward_clip": 0.0,  # > 0: rewards clipped to [-reward_clip, reward_clip] in the targets.
        "target_tau": 0.005,  # Each gradient step moves the targets tau of the way to the online networks.
        **({} if offline else replay_fields),
        "batch_size": 256,
    }
    return ConfigDict({**shared, **own})


def validate(config: ConfigDict, offline: bool = False) -> None:
    """Static checks of the shared fields, and of a network these agents can build (an MLP, no recurrent core)."""
    field_checks.fraction(config, "agent.gamma", example=0.99)
    field_checks.number(config, "agent.target_tau", example=0.005, above=0.0, at_most=1.0)
    field_checks.number(config, "agent.reward_clip", example=1.0, at_least=0.0)
    if offline:
        field_checks.integer(config, "agent.batch_size", at_least=1, example=256)
    else:
        shared_fields.validate_replay(config)
    name = config.agent.name
    if config.network.torso != "mlp":
        raise ConfigError(
            "network.torso",
            f"{name}'s actor and critics read a vector of features through an MLP, not {config.network.torso!r}",
            "set --config.network.torso=mlp",
        )
    shared_fields.require_feed_forward(config, f"{name}'s actor and critics are feed-forward")


@struct.dataclass
class OffPolicyState:
    actor: LearnerState  # params: the actor (`continuous_networks.Model`).
    critic: LearnerState  # params: the twin critics.
    target_critic: cn.Model
    own: Any  # What one agent learns besides: SAC's temperature, TD3's target actor.
    replay: PerDevice | tuple  # Each device's own `replay.Replay`; () learning from a dataset.
    learn_calls: chex.Array  # int32: `learn` calls so far.
    gradient_steps: chex.Array  # int32: gradient steps so far (TD3's delay counts them).
    key: chex.Array  # A key's data (uint32), set by each `learn` call; each gradient step draws its noise from it.


class Batch(NamedTuple):
    """Sampled transitions `[S, ...]`, actions in [-1, 1]^D."""

    observation: Any
    action: chex.Array
    reward: chex.Array
    discount: chex.Array  # gamma times the environment's discount.
    next_observation: Any
    valid: chex.Array  # 0 for the step from an episode's last timestep to the next one's first.
    weights: chex.Array  # Importance weights, 1 for a uniform buffer.
    next_action: chex.Array | None = None  # The action taken at the next observation, in [-1, 1]^D (ReBRAC's).


def batch_from(sample: replay.Sample, actor: nn.Module, gamma: float, reward_clip: float = 0.0) -> Batch:
    """The transitions of sampled sequences of two timesteps, their actions (and the action taken at each next
    observation, where the sample holds it) mapped into [-1, 1]^D."""
    tr = transitions(sample.trajectory, gamma, reward_clip)
    observation = sample.trajectory.timestep.observation
    return Batch(
        observation=jax.tree.map(lambda x: x[0], observation),
        action=cn.from_bounds(sample.trajectory.action[0], actor),
        reward=tr.rewards[0],
        discount=tr.discounts[0],
        next_observation=jax.tree.map(lambda x: x[1], observation),
        valid=tr.valid[0],
        weights=sample.weights,
        next_action=None if sample.next_action is None else cn.from_bounds(sample.next_action, actor),
    )


def masked_mean(x: chex.Array, valid: chex.Array) -> chex.Array:
    """The mean of `x` `[S]` over the valid transitions."""
    return jnp.sum(valid * x) / jnp.maximum(jnp.sum(valid), 1.0)


def td_targets(batch: Batch, next_value: chex.Array) -> chex.Array:
    """y = r + gamma d v(s'), `[S]`, held constant in the critics' loss."""
    chex.assert_equal_shape([batch.reward, batch.discount, next_value])
    return jax.lax.stop_gradient(batch.reward + batch.discount * next_value)


def critic_loss(critic: cn.Model, batch: Batch, targets: chex.Array) -> tuple[chex.Array, tuple[dict, chex.Array]]:
    """J_Q = sum_i 1/2 E[w (Q_i(s, a) - y)^2] over valid transitions; aux `(metrics, priorities [S])`."""
    q_values = critic(batch.observation, batch.action)  # [S, 2]
    td_errors = targets[:, None] - q_values
    loss = masked_mean(batch.weights * 0.5 * jnp.sum(td_errors**2, axis=-1), batch.valid)
    metrics = {"loss": loss, "q_mean": masked_mean(jnp.mean(q_values, axis=-1), batch.valid)}
    return loss, (metrics, jnp.mean(jnp.abs(td_errors), axis=-1))


def polyak(online: Any, target: Any, tau: float) -> Any:
    """theta' <- tau theta + (1 - tau) theta', leaf by leaf."""
    return optax.incremental_update(online, target, tau)


def min_q(critic: cn.Model, observation: Any, action: chex.Array) -> chex.Array:
    """min_i Q_i(s, a), `[S]`: the clipped double-Q estimate (Fujimoto et al. 2018, eq. 10)."""
    return jnp.min(critic(observation, action), axis=-1)


@dataclasses.dataclass(frozen=True)
class Rules:
    """What one off-policy agent adds to the shared part."""

    make_actor: Callable[[int, tuple, tuple], nn.Module]  # (D, low, high) -> the actor module.
    init_own: Callable[[cn.Model], Any]  # The agent's own learner state, from its first actor.
    next_value: Callable[[OffPolicyState, Batch, chex.PRNGKey], chex.Array]  # v(s') `[S]` of the next observations.
    improve: Callable[[OffPolicyState, Batch, chex.PRNGKey, Any], tuple[OffPolicyState, dict]]  # Actor, targets.
    act: Callable[[cn.Model, Any, chex.PRNGKey], tuple]
    greedy_act: Callable[[cn.Model, Any, chex.PRNGKey], tuple]
    # (state, critic, batch, key) -> (a term added to the critics' loss, its metrics): CQL's regulariser; None: none.
    critic_penalty: Callable[[OffPolicyState, cn.Model, Batch, chex.PRNGKey], tuple[chex.Array, dict]] | None = None


def critics_objective(rules: Rules, state: OffPolicyState, batch: Batch, targets: chex.Array, key: chex.PRNGKey):
    """`critic -> (loss, (metrics, priorities))`: `critic_loss`, plus the agent's `critic_penalty` if it has one."""

    def objective(critic: cn.Model) -> tuple[chex.Array, tuple[dict, chex.Array]]:
        loss, (metrics, priorities) = critic_loss(critic, batch, targets)
        if rules.critic_penalty is None:
            return loss, (metrics, priorities)
        penalty, penalty_metrics = rules.critic_penalty(state, critic, batch, key)
        return loss + penalty, ({**metrics, **penalty_metrics}, priorities)

    return objective


def make_off_policy_optimizer(config: ConfigDict, num_updates: int) -> optax.GradientTransformation:
    """`config.optimizer` over the run's gradient steps: `replay_ratio` per `learn` call, one from a dataset (and
    for an agent that learns only from one, which has no replay fields)."""
    from_dataset = shared_fields.learns_from_dataset(config) or "replay_ratio" not in config.agent
    steps_per_learn = 1 if from_dataset else config.agent.replay_ratio
    return make_optimizer(shared_fields.optimizer_settings(config), gradient_steps=num_updates * steps_per_learn)


def build(config: ConfigDict, num_updates: int, rules: Rules, offline: bool = False) -> Agent:
    """The agent: `rules` on the shared critics, targets and replay loop; `offline`, learning from a dataset's
    sampled transitions instead (`podracer.offline`): each `learn` call is one gradient step on the batch it is
    given, and the learner state keeps no buffer."""
    agent_config = config.agent
    replay_setup = None if offline else shared_fields.replay_setup(config, sequence_length=2)
    optimizer = make_off_policy_optimizer(config, num_updates)
    network = cn.network_fields(config.network)

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> OffPolicyState:
        size, low, high = cn.bounds(action_spec)
        actor_key, critic_key, key = jax.random.split(key, 3)
        actor = cn.init_model(actor_key, rules.make_actor(size, low, high), observation_spec)
        critic = cn.init_model(critic_key, cn.TwinCritic(**network), observation_spec, size)
        return OffPolicyState(
            actor=LearnerState(actor, optimizer.init(actor)),
            critic=LearnerState(critic, optimizer.init(critic)),
            target_critic=critic,
            own=rules.init_own(actor),
            replay=empty_buffer(replay_setup, observation_spec, size),
            learn_calls=jnp.int32(0),
            gradient_steps=jnp.int32(0),
            key=key_data(key),
        )

    def gradient_step(state: OffPolicyState, sample: replay.Sample, axis_name) -> tuple[OffPolicyState, dict, Any]:
        key, target_key, improve_key = jax.random.split(jax.random.wrap_key_data(state.key), 3)
        device = collectives.axis_index(axis_name)  # Each device draws its own noise, as it samples its own data.
        batch = batch_from(sample, state.actor.params.module, agent_config.gamma, agent_config.reward_clip)
        next_value = rules.next_value(state, batch, jax.random.fold_in(target_key, device))
        targets = td_targets(batch, next_value)
        penalty_key = jax.random.fold_in(jax.random.fold_in(target_key, device), 1)  # Drawn from only with one.
        objective = critics_objective(rules, state, batch, targets, penalty_key)
        grad_fn = collectives.local_grad(objective, axis_name)
        grads, (metrics, priorities) = grad_fn(state.critic.params)
        grads, metrics = collectives.mean((grads, metrics), axis_name)
        updates, opt_state = optimizer.update(grads, state.critic.opt_state, state.critic.params)
        critic = LearnerState(optax.apply_updates(state.critic.params, updates), opt_state)
        state = state.replace(critic=critic, gradient_steps=state.gradient_steps + 1, key=key_data(key))
        state, improve_metrics = rules.improve(state, batch, jax.random.fold_in(improve_key, device), axis_name)
        critic_grad_norm = optax.tree.norm(flat_vector(grads))  # The clip's own norm, computed once (`flat_vector`).
        return state, {**metrics, "critic_grad_norm": critic_grad_norm, **improve_metrics}, priorities

    replayed_learn = None if offline else replay.make_learn(replay_setup, gradient_step)

    def learn(state: OffPolicyState, trajectory: Trajectory, key: chex.PRNGKey, axis_name=None):
        replay_key, noise_key = jax.random.split(key)
        state = state.replace(key=key_data(noise_key))
        trajectory = trajectory.replace(extras={})  # The buffer keeps no extras.
        return replayed_learn(state, trajectory, replay_key, axis_name)

    return Agent(
        init=init,
        act=rules.act,
        learn=learning_from_batches(gradient_step) if offline else learn,
        acting_params=lambda state: state.actor.params,
        greedy_act=rules.greedy_act,
        remember=None if offline else functools.partial(replay.remember, replay_setup),
    )


def empty_buffer(replay_setup: replay.ReplaySetup | None, observation_spec: Any, size: int) -> PerDevice | tuple:
    """Each device's empty buffer of transitions whose actions have `size` dimensions; `()` for an agent learning
    from a dataset (no `replay_setup`)."""
    if replay_setup is None:
        return ()
    return replay.init(replay_setup, observation_spec, jax.ShapeDtypeStruct((size,), jnp.float32))


def learning_from_batches(gradient_step: replay.GradientStep) -> Callable:
    """`learn` of an agent learning from a dataset: one `gradient_step` on the sampled batch it is given (a
    trajectory of two timesteps, `podracer.offline.sampling`), its noise drawn from the call's key."""

    def learn(state: OffPolicyState, batch: Trajectory, key: chex.PRNGKey, axis_name=None):
        state = state.replace(key=key_data(key))
        state, metrics, _ = gradient_step(state, dataset_sample(batch), axis_name)
        return state.replace(learn_calls=state.learn_calls + 1), metrics

    return learn


def dataset_sample(batch: Trajectory) -> replay.Sample:
    """A batch sampled from a dataset (two timesteps, the next action in `extras`, `podracer.offline.sampling`) as a
    uniform buffer's sample."""
    return replay.uniform_sample(batch.replace(extras={}), batch.extras["next_action"][0])


def per_environment_normal(key: chex.PRNGKey, like: chex.Array) -> chex.Array:
    """N(0, 1) noise shaped as `like` `[B, D]`, from one key per environment `[B]`."""
    return jax.vmap(lambda k: jax.random.normal(k, like.shape[1:], like.dtype))(key)
