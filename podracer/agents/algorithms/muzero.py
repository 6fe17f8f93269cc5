"""MuZero: planning with a learned model, acting by tree search (mctx), learning from sequences in a replay buffer.

Schrittwieser et al. (2020), "Mastering Atari, Go, Chess and Shogi by Planning
with a Learned Model", without Reanalyse, as the Podracer paper (Hessel et
al. 2021, Section 4) runs it on Sebulba. The model (`muzero_model`) unrolls
K steps from the observation at t along the actions taken; at every step
k = 0..K it predicts a policy p^k and a value v^k, and after every action a
reward r^k. The loss (eq. 1) sums, over k,

    l^p(pi_{t+k}, p^k) + value_cost * l^v(z_{t+k}, v^k) + l^r(u_{t+k}, r^k)   (l^r from k = 1),

where pi is the search policy acting stored (`search`, the extras of `act`),
u the observed reward, and z the n-step return (Appendix G)

    z_t = u_{t+1} + gamma u_{t+2} + ... + gamma^{n-1} u_{t+n} + gamma^n nu_{t+n},

bootstrapped from a value nu of the state at t + n, and cut where the episode
ends, with the environment's discount there (`returns.n_step_returns`). With
`value_bootstrap = "search"` nu is the root value of the search acting ran at
t + n, stored with the step (the paper without Reanalyse); with `"model"` it
is the value the current model predicts for that observation, without search
or gradient, as MuZero Reanalyse refreshes its value targets (Schrittwieser
et al. 2021; muzero-general's `use_last_model_value`). A stored value is as
old as its step, up to the whole buffer (on Sebulba CartPole the model's did
better: docs/benchmarks-history.md). Each l is a cross-entropy: the policy
against pi, value and reward against the two-hot projections of z and u on
the support (`support`). Steps past the end of the sampled episode are
masked. As in the paper's pseudocode, each step k >= 1 weighs 1/K and the
gradient into the dynamics' latent input is halved, so the total gradient
stays the same whatever K is.

Each `learn` call adds its rollout to the buffer and takes `replay_ratio`
gradient steps on batches of sequences of K + n + 1 transitions
(`replay.make_learn`); a prioritised buffer samples by |v^0 - z_t|. On
Sebulba, `learner_minibatches = N` splits each update's rollouts into N
learn calls, N times the gradient steps per frame: the paper's way to keep
data efficiency as acting scales.
"""

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import search, shared_fields
from podracer.agents.learning import replay
from podracer.agents.learning.optimizer import make_optimizer
from podracer.agents.learning.returns import n_step_returns
from podracer.agents.models import muzero_model, support
from podracer.agents.models.networks import NetworkParams
from podracer.agents.trajectory import transitions
from podracer.config import field_checks, settings
from podracer.devices import collectives
from podracer.devices.per_device import PerDevice
from podracer.envs.timestep import LAST

VALUE_BOOTSTRAPS = ("search", "model")


def defaults() -> ConfigDict:
    return ConfigDict(
        {
            "gamma": 0.997,
            "n_step": 10,  # Steps of real reward in a value target (Appendix G: 10 for Atari).
            "unroll_steps": 5,  # K: steps the model is unrolled in the loss (Appendix G: 5).
            "support_size": 10,  # S: values and rewards are distributions over h-transformed -S..S.
            "value_cost": 0.25,  # Weight of the value loss (the paper's Reanalyse settings; 1 in eq. 1).
            "reward_clip": 0.0,  # > 0: rewards clipped to [-reward_clip, reward_clip].
            "value_bootstrap": "search",  # One of VALUE_BOOTSTRAPS: the n-step target's tail (module docstring).
            **shared_fields.SEARCH_DEFAULTS,
            **shared_fields.REPLAY_DEFAULTS,
        }
    )


def validate(config: ConfigDict) -> None:
    field_checks.integer(config, "agent.unroll_steps", at_least=1, example=5)
    validate_targets(config)
    shared_fields.require_feed_forward(config, "MuZero's model is feed-forward (representation, dynamics, prediction)")


def validate_targets(config: ConfigDict) -> None:
    """Every field's checks but `unroll_steps`'s: also Sampled AlphaZero's, which has no model to unroll."""
    field_checks.fraction(config, "agent.gamma", example=0.997)
    field_checks.integer(config, "agent.n_step", at_least=1, example=10)
    field_checks.integer(config, "agent.support_size", at_least=1, example=10)
    field_checks.number(config, "agent.value_cost", example=0.25, at_least=0.0)
    field_checks.number(config, "agent.reward_clip", example=1.0, at_least=0.0)
    field_checks.choice(config, "agent.value_bootstrap", VALUE_BOOTSTRAPS)
    shared_fields.validate_search(config)
    shared_fields.validate_replay(config)


@struct.dataclass
class MuZeroState:
    params: NetworkParams  # The model: representation, dynamics and prediction.
    opt_state: Any
    replay: PerDevice  # Each device's own `replay.Replay`, keeping the search policy and root value of every step.
    learn_calls: chex.Array  # int32: `learn` calls so far.


def scale_gradient(x: chex.Array, scale: float) -> chex.Array:
    """`x` forward, `scale` times its gradient backward (the paper's pseudocode `scale_gradient`)."""
    return x * scale + jax.lax.stop_gradient(x) * (1.0 - scale)


def cross_entropy(target_probabilities: chex.Array, logits: chex.Array) -> chex.Array:
    """-sum_i target_i log softmax(logits)_i over the last axis."""
    return -jnp.sum(target_probabilities * jax.nn.log_softmax(logits), axis=-1)


class Targets(struct.PyTreeNode):
    """What the unrolled model is trained towards, per unroll step and sequence."""

    acting: dict  # [K + 1, S, ...] what acting stored at t + k (its extras): the search policy pi_{t+k}, ...
    values: chex.Array  # [K + 1, S] the n-step returns z_{t+k}.
    rewards: chex.Array  # [K, S] the rewards u_{t+k+1} after each action of the unroll.
    in_episode: chex.Array  # [K + 1, S] 1 where step t + k is a decision of the episode of step t.


@dataclasses.dataclass(frozen=True)
class LossSettings:
    """What MuZero's targets and loss read of `config.agent` (each field is described in `defaults`)."""

    gamma: float
    n_step: int
    unroll_steps: int
    support_size: int
    value_cost: float
    reward_clip: float
    value_bootstrap: str


def targets(sample_trajectory: Any, loss_settings: LossSettings, bootstrap_values: Any = None) -> Targets:
    """The unroll's targets from a sampled sequence of K + n + 1 transitions (timesteps `[K + n + 2, S]`).

    The n-step returns bootstrap from the stored root values, except at steps
    n..n+K (where the K + 1 returns end) from `bootstrap_values` `[K + 1, S]`
    where given. An episode cut inside the window by a time limit still
    bootstraps from the stored root value of its last step.
    """
    unroll, n = loss_settings.unroll_steps, loss_settings.n_step
    step_type = sample_trajectory.timestep.step_type
    chex.assert_axis_dimension(step_type, 0, unroll + n + 2)
    tr = transitions(sample_trajectory, loss_settings.gamma, loss_settings.reward_clip)
    window = unroll + n
    root_values = sample_trajectory.extras["root_value"][: window + 1]
    if bootstrap_values is not None:
        root_values = root_values.at[n:].set(bootstrap_values)
    values = n_step_returns(tr.rewards[:window], tr.discounts[:window], root_values, tr.lambdas(1.0)[:window], n)
    # A LAST timestep is followed by the next episode's FIRST: step k is in the episode while no step before it is LAST.
    decisions = (step_type[: unroll + 1] != LAST).astype(jnp.float32)
    return Targets(
        acting=jax.tree.map(lambda x: x[: unroll + 1], sample_trajectory.extras),
        values=values,
        rewards=tr.rewards[:unroll],
        in_episode=jnp.cumprod(decisions, axis=0),
    )


def categorical_policy_loss(policy_logits: chex.Array, acting: dict) -> chex.Array:
    """MuZero's l^p `[S]`: the cross-entropy of the policy logits `[S, A]` against the search policy acting stored."""
    return cross_entropy(acting["search_policy"], policy_logits)


# (prediction's policy outputs [S, ...], acting's extras [S, ...]) -> [S]
PolicyLoss = Callable[[Any, dict], chex.Array]


def loss(
    params: NetworkParams,
    sample: replay.Sample,
    loss_settings: LossSettings,
    policy_loss: PolicyLoss = categorical_policy_loss,
) -> tuple[chex.Array, tuple]:
    """The importance-weighted unrolled loss (module docstring), l^p by `policy_loss`; aux `(metrics, priorities)`."""
    trajectory, bootstrap_values = sample.trajectory, None
    unroll, n, support_size = loss_settings.unroll_steps, loss_settings.n_step, loss_settings.support_size
    if loss_settings.value_bootstrap == "model":  # The current model's values of the observations at t + n + k.
        observations = jax.tree.map(
            lambda x: x[n : n + unroll + 1].reshape((-1,) + x.shape[2:]), trajectory.timestep.observation
        )
        _, bootstrap_logits = muzero_model.predict(params, muzero_model.represent(params, observations))
        bootstrap_values = support.to_scalar(bootstrap_logits).reshape(unroll + 1, -1)
    target = jax.lax.stop_gradient(targets(trajectory, loss_settings, bootstrap_values))
    latent = muzero_model.represent(params, jax.tree.map(lambda x: x[0], trajectory.timestep.observation))
    policy_losses, value_loss, reward_loss = [], [], []
    for k in range(unroll + 1):
        policy_logits, value_logits = muzero_model.predict(params, latent)
        policy_losses.append(policy_loss(policy_logits, jax.tree.map(lambda x, k=k: x[k], target.acting)))
        value_loss.append(cross_entropy(support.to_categorical(target.values[k], support_size), value_logits))
        if k == 0:
            first_value = support.to_scalar(value_logits)
        if k < unroll:
            latent, reward_logits = muzero_model.dynamics(params, scale_gradient(latent, 0.5), trajectory.action[k])
            reward_loss.append(cross_entropy(support.to_categorical(target.rewards[k], support_size), reward_logits))
    step_weights = jnp.array([1.0] + [1.0 / unroll] * unroll)[:, None]  # [K + 1, 1]
    in_episode = target.in_episode * step_weights
    policy = jnp.sum(in_episode * jnp.stack(policy_losses), axis=0)
    value = jnp.sum(in_episode * jnp.stack(value_loss), axis=0)
    # The reward of step k + 1 follows the action at step k: real while step k is in the episode.
    reward = jnp.sum(target.in_episode[:-1] * step_weights[1:] * jnp.stack(reward_loss), axis=0)
    per_sequence = policy + loss_settings.value_cost * value + reward
    total = jnp.mean(sample.weights * per_sequence)
    metrics = {
        "loss": total,
        "policy_loss": jnp.mean(policy),
        "value_loss": jnp.mean(value),
        "reward_loss": jnp.mean(reward),
        "value_target": jnp.mean(target.values[0]),
    }
    priorities = jnp.abs(jax.lax.stop_gradient(first_value) - target.values[0]) * target.in_episode[0]
    return total, (metrics, priorities)


@dataclasses.dataclass(frozen=True)
class Variant:
    """What Sampled MuZero (`continuous_search.sampled_muzero`) changes of MuZero's replay, targets and loss."""

    make_model: Callable[[Any, Any], Any]  # (observation_spec, action_spec) -> the model's flax module.
    stored: Callable[[Any], tuple]  # action_spec -> (the action's ShapeDtypeStruct, the extras `act` stores).
    act: Callable  # The agent's `act` (a search per environment).
    greedy_act: Callable
    policy_loss: PolicyLoss = categorical_policy_loss


# (params, sample) -> (loss, (metrics, priorities [S])): `loss` with its settings bound, say.
SequenceLoss = Callable[[NetworkParams, replay.Sample], tuple[chex.Array, tuple]]


def make_gradient_step(config: ConfigDict, num_updates: int, sequence_loss: SequenceLoss) -> tuple:
    """`(gradient_step, optimizer)`: one step of `sequence_loss` on a sampled batch, gradients averaged over
    `axis_name`'s devices (each sampled its own batch), then `optimizer`'s update."""
    gradient_steps = num_updates * config.agent.replay_ratio
    optimizer = make_optimizer(shared_fields.optimizer_settings(config), gradient_steps=gradient_steps)

    def gradient_step(state: MuZeroState, sample: replay.Sample, axis_name) -> tuple[MuZeroState, dict, chex.Array]:
        grad_fn = collectives.local_grad(sequence_loss, axis_name)
        grads, (metrics, priorities) = grad_fn(state.params, sample)
        grads, metrics = collectives.mean((grads, metrics), axis_name)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        state = state.replace(params=optax.apply_updates(state.params, updates), opt_state=opt_state)
        return state, {**metrics, "grad_norm": optax.tree.norm(grads)}, priorities

    return gradient_step, optimizer


def build_variant(config: ConfigDict, num_updates: int, variant: Variant) -> Agent:
    """A MuZero agent (module docstring) with `variant`'s model, stored extras, search and policy loss."""
    replay_setup = shared_fields.replay_setup(config, config.agent.unroll_steps + config.agent.n_step + 2)
    loss_settings = settings.read(LossSettings, config.agent)
    sequence_loss = functools.partial(loss, loss_settings=loss_settings, policy_loss=variant.policy_loss)
    gradient_step, optimizer = make_gradient_step(config, num_updates, sequence_loss)

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> MuZeroState:
        action, extras = variant.stored(action_spec)
        params = muzero_model.init(key, variant.make_model(observation_spec, action_spec), observation_spec, action)
        return MuZeroState(
            params=params,
            opt_state=optimizer.init(params),
            replay=replay.init(replay_setup, observation_spec, action, extras),
            learn_calls=jnp.int32(0),
        )

    learn = replay.make_learn(replay_setup, gradient_step)
    return Agent(init, variant.act, learn, lambda state: state.params, greedy_act=variant.greedy_act)


def stored(action_spec: Any) -> tuple:
    """MuZero's action (an index) and extras: the search policy over the A actions and the root's value."""
    policy, value = jax.ShapeDtypeStruct((action_spec.num_values,), jnp.float32), jax.ShapeDtypeStruct((), jnp.float32)
    return muzero_model.INDEX_ACTION, {"search_policy": policy, "root_value": value}


def build(config: ConfigDict, num_updates: int) -> Agent:
    network, support_size = shared_fields.network_settings(config), config.agent.support_size
    act = search.make_act(shared_fields.search_settings(config), config.agent.gamma)

    def make_model(observation_spec: Any, action_spec: Any) -> Any:
        return muzero_model.make_model(network, observation_spec, action_spec, support_size)

    return build_variant(config, num_updates, Variant(make_model, stored, act, search.greedy(act)))


registry.register(
    "muzero",
    defaults=defaults,
    build=build,
    validate=validate,
    config_defaults=shared_fields.REPLAY_CONFIG_DEFAULTS,
)
