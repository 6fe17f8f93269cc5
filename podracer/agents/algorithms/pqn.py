"""PQN: Q(lambda) on each rollout of vectorised environments, with no replay buffer and no target network.

Parallelised Q-networks (Gallici et al., ICLR 2025, "Simplifying Deep
Temporal Difference Learning", Algorithm 1): many environments stepped in
parallel give the decorrelated data a replay buffer would, LayerNorm in the
Q-network (`network.layer_norm`, `torsos.MLP`) keeps TD learning stable
without a target network (their Section 3), and every rollout is learned from
as it comes, then dropped. Each `learn` call, on a trajectory `[T + 1, B]`:

1. computes the lambda-return target of every transition backwards
   (Section 4, Q(lambda) with the max as the bootstrap),
       R_t = r_t + gamma d_t [lambda R_{t+1} + (1 - lambda) max_a Q(s_{t+1}, a)],  R_T = max_a Q(s_T, a),
   `returns.lambda_returns` with v = max_a Q. d_t is the environment's
   discount (0 at termination, 1 at a time limit) and lambda is cut to 0 at a
   transition into an episode's last step, so a return never looks past the
   end of its episode. The Q-values at s_1 .. s_{T-1} are those `act`
   recorded (the network being trained, on Anakin; one update older under
   Sebulba with `policy_lag` 1), and at s_T the current network's, as
   purejaxql's `pqn_gymnax.py` does;
2. takes `num_epochs` x `num_minibatches` gradient steps on the squared TD
   error 0.5 (Q(s_t, a_t) - R_t)^2 (the target held fixed), each on a
   shuffled minibatch of this device's transitions, gradients averaged over
   devices (`optimizer.sgd_step`, `minibatches.minibatch_epochs`, each minibatch gathered inside its step).

The transition from an episode's LAST step to the next FIRST one is not a
real one: it counts as zero in the loss (`Transitions.valid`). Rewards are
clipped where `reward_clip` > 0, then scaled by `reward_scale` (purejaxql's
`REW_SCALE`). Acting is DQN's: epsilon-greedy with epsilon decaying linearly
over the first `epsilon_fraction` of the run's `learn` calls (`exploration.act`,
`exploration.epsilon_schedule`); its extras are the Q-values, which the targets
reuse. The Q-network is feed-forward (`network.core = "none"`).
"""

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
from flax import struct
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import shared_fields
from podracer.agents.learning import exploration
from podracer.agents.learning.minibatches import minibatch_epochs
from podracer.agents.learning.optimizer import make_optimizer, sgd_step, slices_gradients
from podracer.agents.learning.returns import lambda_returns
from podracer.agents.models import networks
from podracer.agents.trajectory import Trajectory, merge_leading_dims, transitions
from podracer.config import field_checks, settings
from podracer.devices import collectives


def defaults() -> ConfigDict:
    """purejaxql's MinAtar settings (`config/alg/pqn_minatar.yaml`) where it has one; the network is config.network's."""
    return ConfigDict(
        {
            "gamma": 0.99,
            "td_lambda": 0.65,  # The lambda of the lambda-return targets (0: one-step Q-learning).
            "num_epochs": 2,
            "num_minibatches": 32,
            **shared_fields.EPSILON_DEFAULTS,
            "epsilon_fraction": 0.1,
            "reward_clip": 0.0,  # > 0: rewards clipped to [-reward_clip, reward_clip] (Atari), then scaled.
            "reward_scale": 1.0,  # Rewards are multiplied by it before the targets are computed.
        }
    )


def validate(config: ConfigDict) -> None:
    field_checks.fraction(config, "agent.gamma", example=0.99)
    field_checks.fraction(config, "agent.td_lambda", example=0.65)
    field_checks.integer(config, "agent.num_epochs", at_least=1, example=2)
    field_checks.integer(config, "agent.num_minibatches", at_least=1, example=32)
    shared_fields.validate_epsilon(config)
    field_checks.number(config, "agent.reward_clip", example=1.0, at_least=0.0)
    field_checks.number(config, "agent.reward_scale", example=0.1, above=0.0)
    shared_fields.require_feed_forward(config, "PQN learns from single transitions with a feed-forward Q-network")


@struct.dataclass
class PQNState:
    params: networks.NetworkParams
    opt_state: Any
    learn_calls: chex.Array  # int32: `learn` calls so far (the epsilon schedule's clock).


@struct.dataclass
class Samples:
    """Lone transitions `[1, N]` (N = T x B on this device), as a feed-forward network's loss reads them."""

    observation: Any
    action: chex.Array
    target: chex.Array  # The lambda-return R_t.
    valid: chex.Array  # 0 for the LAST -> FIRST step of an auto-reset.


def q_lambda_targets(
    trajectory: Trajectory,
    q_values: chex.Array,
    gamma: float,
    td_lambda: float,
    reward_scale: float = 1.0,
    reward_clip: float = 0.0,
) -> chex.Array:
    """The lambda-return targets `[T, B]` of a trajectory's transitions, from the Q-values `[T + 1, B, A]` at its
    timesteps (the first is not read: no transition bootstraps from s_0); rewards clipped (`reward_clip` > 0),
    then scaled."""
    chex.assert_rank(q_values, 3)
    chex.assert_equal_shape_prefix([q_values, trajectory.timestep.step_type], 2)
    tr = transitions(trajectory, gamma, reward_clip)
    values = jnp.max(q_values, axis=-1)
    return lambda_returns(reward_scale * tr.rewards, tr.discounts, values, tr.lambdas(td_lambda))


def loss(params: networks.NetworkParams, batch: Samples) -> tuple[chex.Array, dict]:
    """0.5 (Q(s, a) - R)^2, a mean over the batch's transitions with the reset steps counting as zero."""
    chex.assert_rank([batch.action, batch.target, batch.valid], 2)
    _, q_values = params.unroll((), batch.observation, jnp.zeros(batch.valid.shape, bool))
    chosen = jnp.take_along_axis(q_values, batch.action[..., None], axis=-1)[..., 0]
    td_errors = batch.target - chosen
    total = 0.5 * jnp.mean(batch.valid * td_errors**2)
    return total, {"loss": total, "q_mean": jnp.mean(batch.valid * chosen)}


@dataclasses.dataclass(frozen=True)
class TargetSettings:
    """What PQN's targets read of `config.agent` (each field is described in `defaults`)."""

    gamma: float
    td_lambda: float
    reward_scale: float
    reward_clip: float


def make_samples(
    params: networks.NetworkParams, trajectory: Trajectory, target_settings: TargetSettings
) -> tuple[Samples, chex.Array]:
    """Every transition of the trajectory with its target, as `[1, T * B]`; and the targets' mean over real ones."""
    _, last_q = params.step((), jax.tree.map(lambda x: x[-1], trajectory.timestep.observation))
    q_values = jnp.concatenate([trajectory.extras["q_values"], last_q[None]])
    targets = q_lambda_targets(trajectory, q_values, **dataclasses.asdict(target_settings))
    valid = transitions(trajectory, target_settings.gamma).valid
    samples = Samples(
        observation=jax.tree.map(lambda x: x[:-1], trajectory.timestep.observation),
        action=trajectory.action,
        target=targets,
        valid=valid,
    )
    target_mean = jnp.sum(valid * targets) / jnp.maximum(jnp.sum(valid), 1.0)
    return jax.lax.stop_gradient(jax.tree.map(lambda x: merge_leading_dims(x)[None], samples)), target_mean


def build(config: ConfigDict, num_updates: int) -> Agent:
    chunked = slices_gradients(shared_fields.network_settings(config))
    init, learn, acting_params = learner(config, num_updates, make_samples, loss, chunk_axis=1 if chunked else None)
    return Agent(
        init=init,
        act=exploration.act,
        learn=learn,
        acting_params=acting_params,
        greedy_act=exploration.greedy(exploration.act),
    )


def learner(
    config: ConfigDict,
    num_updates: int,
    samples_fn: Callable,
    loss_fn: Callable,
    specs: Callable = lambda observation_spec, action_spec: (observation_spec, action_spec),
    chunk_axis: int | None = None,
    **epoch_options: Any,
) -> tuple[Callable, Callable, Callable]:
    """PQN's `(init, learn, acting_params)`: `samples_fn(params, trajectory, target_settings)` gives the rollout's
    samples with their targets and the targets' mean, then `num_epochs` x `num_minibatches` steps of `loss_fn`;
    the Q-network is built for `specs(observation_spec, action_spec)` (PQN-VDN's: one agent's)."""
    agent_config, network = config.agent, shared_fields.network_settings(config)
    gradient_steps = num_updates * agent_config.num_epochs * agent_config.num_minibatches
    optimizer = make_optimizer(shared_fields.optimizer_settings(config), gradient_steps=gradient_steps)
    epsilon = exploration.epsilon_schedule(shared_fields.epsilon_settings(config), num_updates)
    target_settings = settings.read(TargetSettings, agent_config)

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> PQNState:
        observation_spec, action_spec = specs(observation_spec, action_spec)
        params = networks.init_module(
            key, networks.make_q_network(network, observation_spec, action_spec), observation_spec
        )
        return PQNState(params=params, opt_state=optimizer.init(params), learn_calls=jnp.int32(0))

    def learn(state: PQNState, trajectory: Trajectory, key: chex.PRNGKey, axis_name=None) -> tuple[PQNState, dict]:
        samples, target_mean = samples_fn(state.params, trajectory, target_settings)
        minibatch_step = functools.partial(
            sgd_step, loss_fn=loss_fn, optimizer=optimizer, axis_name=axis_name, chunk_axis=chunk_axis
        )
        new_state, metrics = minibatch_epochs(
            state,
            samples,
            key,
            minibatch_step,
            agent_config.num_epochs,
            agent_config.num_minibatches,
            axis_name,
            gather_in_step=True,
            **epoch_options,
        )
        metrics = {
            **metrics,
            "target_mean": collectives.mean(target_mean, axis_name),
            "epsilon": epsilon(state.learn_calls),
        }
        return new_state.replace(learn_calls=state.learn_calls + 1), metrics

    def acting_params(state: PQNState) -> exploration.ActingParams:
        return exploration.acting_params(state.params, epsilon, state.learn_calls)

    return init, learn, acting_params


registry.register("pqn", defaults=defaults, build=build, validate=validate)
