"""Implicit Q-Learning (Kostrikov, Nair and Levine 2022, "Offline Reinforcement Learning with Implicit Q-Learning").

IQL never queries Q at an action the dataset does not hold. Each gradient
step updates three networks, each loss reading the others as they were before
the step (as CORL's and Unifloral's implementations do; the authors' code
reads the value after its own update), so the three updates are independent
and XLA may run them side by side:

- the value V(s) is an upper expectile of the target critics' Q over the
  dataset's actions (eq. 5):
    L_V = E[L_2^tau(min_i Q'_i(s, a) - V(s))],   L_2^tau(u) = |tau - 1(u < 0)| u^2,
  tau `agent.expectile` (0.7 for locomotion);
- the policy is extracted by advantage-weighted regression (eq. 7):
    L_pi = -E[min(exp(beta (min_i Q'_i(s, a) - V(s))), 100) log pi(a|s)],
  beta `agent.temperature` (3.0), the weights clipped at 100 as in the
  authors' code; pi is a Gaussian whose mean is tanh of the actor's output
  (in TD3's unit box [-1, 1]^D) and whose log-std is the actor's, clipped;
- both critics regress onto V of the next state (eq. 6):
    L_Q = sum_i 1/2 E[(r + gamma d V(s') - Q_i(s, a))^2],   d 0 at termination;
- the target critics move by Polyak averaging (`agent.target_tau`).

`greedy_act` plays the Gaussian's mean, `act` samples it (clipped to the box).
Nothing is drawn at random in learning, so an update is the same on any
number of devices. Actor, critics and value each have their own state of the
optimiser `config.optimizer` describes.

Without `offline.dataset` IQL learns online: each `learn` call adds its
rollout to each device's replay buffer and takes `replay_ratio` gradient
steps on batches of `batch_size` from it, as SAC and TD3 do. That is the
paper's fine-tuning (Section 5.3): started from an offline run with
`offline.start_from`, the buffer first holds that run's dataset.
"""

import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import off_policy, shared_fields
from podracer.agents.learning import replay
from podracer.agents.learning.optimizer import LearnerState, sgd_step
from podracer.agents.models import continuous_networks as cn
from podracer.agents.models import policy
from podracer.agents.trajectory import Trajectory
from podracer.config import field_checks
from podracer.devices.per_device import PerDevice

WEIGHT_CLIP = 100.0  # The largest advantage weight (the authors' code).


def defaults() -> ConfigDict:
    return off_policy.defaults(expectile=0.7, temperature=3.0)


def validate(config: ConfigDict) -> None:
    off_policy.validate(config, offline=shared_fields.learns_from_dataset(config))
    field_checks.number(config, "agent.expectile", example=0.7, above=0.0, at_most=1.0)
    field_checks.number(config, "agent.temperature", example=3.0, at_least=0.0)


@struct.dataclass
class IQLState:
    actor: LearnerState  # params: a `GaussianActor`.
    critic: LearnerState  # params: the twin critics.
    value: LearnerState  # params: V(s).
    target_critic: cn.Model
    replay: PerDevice | tuple  # Each device's own `replay.Replay` learning online; () learning from a dataset.
    learn_calls: chex.Array


def expectile_loss(difference: chex.Array, expectile: float) -> chex.Array:
    """L_2^tau(u) = |tau - 1(u < 0)| u^2, elementwise (eq. 5's asymmetric square)."""
    return jnp.abs(expectile - (difference < 0).astype(difference.dtype)) * difference**2


def value_loss(value: cn.Model, observation: Any, target_q: chex.Array, expectile: float) -> tuple[chex.Array, dict]:
    """L_V = E[L_2^tau(Q'(s, a) - V(s))] for the target critics' `target_q` `[S]` (eq. 5)."""
    v = value(observation)
    chex.assert_equal_shape([v, target_q])
    loss = jnp.mean(expectile_loss(target_q - v, expectile))
    return loss, {"value_loss": loss, "v_mean": jnp.mean(v)}


def policy_outputs(actor: cn.Model, observation: Any) -> dict:
    """The Gaussian over [-1, 1]^D: mean tanh(actor's mean), the actor's clipped log-std."""
    outputs = actor(observation)
    return {"mean": jnp.tanh(outputs["mean"]), "log_std": outputs["log_std"]}


def awr_loss(
    actor: cn.Model, observation: Any, action: chex.Array, advantage: chex.Array, temperature: float
) -> tuple[chex.Array, dict]:
    """L_pi = -E[min(exp(beta A), 100) log pi(a|s)] for actions `[S, D]` in [-1, 1]^D, A held constant (eq. 7)."""
    weights = jnp.minimum(jnp.exp(temperature * jax.lax.stop_gradient(advantage)), WEIGHT_CLIP)
    log_prob = policy.log_prob(policy_outputs(actor, observation), action)
    chex.assert_equal_shape([weights, log_prob])
    loss = -jnp.mean(weights * log_prob)
    return loss, {"actor_loss": loss, "mean_weight": jnp.mean(weights)}


def critic_loss(critic: cn.Model, batch: off_policy.Batch, next_v: chex.Array) -> tuple[chex.Array, dict]:
    """L_Q = sum_i 1/2 E[(r + gamma d V(s') - Q_i(s, a))^2] (eq. 6)."""
    loss, (metrics, _) = off_policy.critic_loss(critic, batch, off_policy.td_targets(batch, next_v))
    return loss, metrics


def make_gradient_step(agent_config: ConfigDict, optimizer: optax.GradientTransformation) -> replay.GradientStep:
    """One step of all three losses on a sampled batch, with the critics' mean |TD error| as priorities."""

    def gradient_step(state: IQLState, sample: replay.Sample, axis_name) -> tuple[IQLState, dict, chex.Array]:
        batch = off_policy.batch_from(sample, state.actor.params.module, agent_config.gamma, agent_config.reward_clip)
        target_q = off_policy.min_q(state.target_critic, batch.observation, batch.action)

        def update(learner: LearnerState, loss) -> tuple[LearnerState, dict]:
            return sgd_step(learner, batch, lambda params, _: loss(params), optimizer, axis_name)

        advantage = target_q - state.value.params(batch.observation)  # All three read V before this step's.
        next_v = jax.lax.stop_gradient(state.value.params(batch.next_observation))
        value, value_metrics = update(
            state.value, lambda v: value_loss(v, batch.observation, target_q, agent_config.expectile)
        )
        actor, actor_metrics = update(
            state.actor, lambda a: awr_loss(a, batch.observation, batch.action, advantage, agent_config.temperature)
        )
        critic, critic_metrics = update(state.critic, lambda c: critic_loss(c, batch, next_v))
        target_critic = off_policy.polyak(critic.params, state.target_critic, agent_config.target_tau)
        metrics = {**value_metrics, **actor_metrics, **critic_metrics}
        metrics.pop("grad_norm")
        _, (_, priorities) = off_policy.critic_loss(state.critic.params, batch, off_policy.td_targets(batch, next_v))
        return state.replace(actor=actor, critic=critic, value=value, target_critic=target_critic), metrics, priorities

    return gradient_step


def greedy_act(params: cn.Model, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """The Gaussian's mean, on the action bounds."""
    del key
    return cn.to_bounds(policy_outputs(params, observation)["mean"], params.module), {}


def act(params: cn.Model, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
    """A sample of the Gaussian, clipped to [-1, 1]^D, on the action bounds."""
    unit = jnp.clip(policy.sample(key, policy_outputs(params, observation)), -1.0, 1.0)
    return cn.to_bounds(unit, params.module), {}


def build(config: ConfigDict, num_updates: int) -> Agent:
    network = cn.network_fields(config.network)
    replay_setup = None if shared_fields.learns_from_dataset(config) else shared_fields.replay_setup(config, 2)
    optimizer = off_policy.make_off_policy_optimizer(config, num_updates)
    gradient_step = make_gradient_step(config.agent, optimizer)

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> IQLState:
        size, low, high = cn.bounds(action_spec)
        actor_key, critic_key, value_key = jax.random.split(key, 3)
        models = (
            cn.init_model(actor_key, cn.GaussianActor(size, low, high, **network), observation_spec),
            cn.init_model(critic_key, cn.TwinCritic(**network), observation_spec, size),
            cn.init_model(value_key, cn.StateValue(**network), observation_spec),
        )
        actor, critic, value = (LearnerState(model, optimizer.init(model)) for model in models)
        buffer = off_policy.empty_buffer(replay_setup, observation_spec, size)
        return IQLState(actor, critic, value, target_critic=critic.params, replay=buffer, learn_calls=jnp.int32(0))

    def learn_from_batch(state: IQLState, batch: Trajectory, key: chex.PRNGKey, axis_name=None):
        del key  # Nothing is drawn.
        state, metrics, _ = gradient_step(state, off_policy.dataset_sample(batch), axis_name)
        return state.replace(learn_calls=state.learn_calls + 1), metrics

    replayed_learn = None if replay_setup is None else replay.make_learn(replay_setup, gradient_step)

    def learn_online(state: IQLState, trajectory: Trajectory, key: chex.PRNGKey, axis_name=None):
        return replayed_learn(state, trajectory.replace(extras={}), key, axis_name)  # The buffer keeps no extras.

    return Agent(
        init=init,
        act=act,
        learn=learn_from_batch if replay_setup is None else learn_online,
        acting_params=lambda state: state.actor.params,
        greedy_act=greedy_act,
        remember=None if replay_setup is None else functools.partial(replay.remember, replay_setup),
    )


registry.register(
    "iql",
    defaults=defaults,
    build=build,
    validate=validate,
    config_defaults=shared_fields.OFFLINE_CONFIG_DEFAULTS,
    offline=True,
    online=True,
)
