"""Proximal Policy Optimization (Schulman et al. 2017) with GAE, epochs x minibatches.

The clipped surrogate objective (eq. 7), a value loss (optionally clipped
around the old value, as in OpenAI baselines and CleanRL) and an entropy bonus
(eq. 9); advantages from GAE (Schulman et al. 2016). `learn` makes
`num_epochs` passes over the local shard of the trajectory, each split into
`num_minibatches` shuffled minibatches, one replicated gradient step per
minibatch. A feed-forward network's minibatches are of transitions; a
recurrent one's are of environments, each keeping its whole sequence and the
state it started from, so that the loss replays the sequence as it was acted
(as PureJaxRL's `ppo_rnn.py` splits them). Advantage normalisation uses statistics pooled over all
devices, so a minibatch is normalised as the union of every device's part of it.
"""

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
from podracer.agents.algorithms import shared_fields
from podracer.agents.algorithms.network_agent import hyperparameters, network_agent, shared_defaults, validate_shared
from podracer.agents.learning.minibatches import minibatch_epochs
from podracer.agents.learning.optimizer import LearnerState, make_optimizer, sgd_step, slices_gradients
from podracer.agents.learning.returns import generalized_advantages
from podracer.agents.models import networks, policy
from podracer.agents.trajectory import Trajectory, merge_leading_dims, transitions
from podracer.config import field_checks
from podracer.devices import collectives
from podracer.envs.timestep import FIRST


def defaults() -> ConfigDict:
    return shared_defaults(
        gae_lambda=0.95,
        num_epochs=4,
        num_minibatches=4,
        clip_epsilon=0.2,
        clip_value_loss=True,
        normalize_advantages=True,
    )


def validate(config: ConfigDict) -> None:
    validate_shared(config)
    field_checks.fraction(config, "agent.gae_lambda", example=0.95)
    field_checks.integer(config, "agent.num_epochs", at_least=1, example=4)
    field_checks.integer(config, "agent.num_minibatches", at_least=1, example=4)
    # The ratio is clipped to [1 - clip_epsilon, 1 + clip_epsilon].
    field_checks.number(config, "agent.clip_epsilon", example=0.2, above=0.0, at_most=1.0)
    field_checks.boolean(config, "agent.clip_value_loss")
    field_checks.boolean(config, "agent.normalize_advantages")


@struct.dataclass
class Samples:
    """Sequences `[L, M, ...]` of M environments (or, feed-forward, `[1, N]`: N lone transitions) for the loss."""

    observation: Any
    first: chex.Array  # Where an episode starts: a recurrent core starts afresh there.
    action: chex.Array
    old_log_prob: chex.Array
    old_value: chex.Array
    advantage: chex.Array
    target_return: chex.Array
    valid: chex.Array
    state: Any  # Leaves [1, M, ...]: the recurrent state at each sequence's start; () feed-forward.


def masked_normalize(x: chex.Array, mask: chex.Array, axis_name: collectives.AxisName, eps: float = 1e-8) -> chex.Array:
    """(x - mean) / (std + eps) over the masked entries of every device on `axis_name`."""
    count, total, total_sq = collectives.total((jnp.sum(mask), jnp.sum(mask * x), jnp.sum(mask * x**2)), axis_name)
    count = jnp.maximum(count, 1.0)
    mean = total / count
    std = jnp.sqrt(jnp.maximum(total_sq / count - mean**2, 0.0))
    return (x - mean) / (std + eps)


def loss(
    params: Any,
    batch: Samples,
    *,
    unroll_fn: Callable,
    clip_epsilon: float,
    clip_value_loss: bool,
    value_cost: float,
    entropy_cost: float,
) -> tuple[jnp.ndarray, dict]:
    """The PPO objective on a batch whose advantages are used as they are (`learn` normalises each minibatch's first).

    Every term is a mean over the batch, masked transitions counting as zero.
    """
    chex.assert_rank([batch.advantage, batch.valid], 2)
    initial_state = jax.tree.map(lambda x: x[0], batch.state)
    _, (outputs, value) = unroll_fn(params, initial_state, batch.observation, batch.first)
    log_ratio = policy.log_prob(outputs, batch.action) - batch.old_log_prob
    ratio = jnp.exp(log_ratio)
    advantage = batch.advantage
    clipped_ratio = jnp.clip(ratio, 1.0 - clip_epsilon, 1.0 + clip_epsilon)
    policy_loss = jnp.mean(batch.valid * jnp.maximum(-advantage * ratio, -advantage * clipped_ratio))
    value_error = (value - batch.target_return) ** 2
    if clip_value_loss:
        clipped_value = batch.old_value + jnp.clip(value - batch.old_value, -clip_epsilon, clip_epsilon)
        value_error = jnp.maximum(value_error, (clipped_value - batch.target_return) ** 2)
    value_loss = 0.5 * jnp.mean(batch.valid * value_error)
    entropy = jnp.mean(batch.valid * policy.entropy(outputs))
    total = policy_loss + value_cost * value_loss - entropy_cost * entropy
    return total, {
        "loss": total,
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "approx_kl": jnp.mean(batch.valid * ((ratio - 1.0) - log_ratio)),
        "clip_fraction": jnp.mean(batch.valid * (jnp.abs(ratio - 1.0) > clip_epsilon)),
    }


def make_samples(
    params: Any,
    trajectory: Trajectory,
    *,
    unroll_fn: Callable,
    gamma: float,
    gae_lambda: float,
    reward_clip: float = 0.0,
) -> Samples:
    """GAE advantages and return targets with the current parameters: sequences `[T, B]` for a recurrent network,
    `[1, T * B]` transitions for a feed-forward one."""
    _, values = networks.unroll_trajectory(unroll_fn, params, trajectory)
    tr = transitions(trajectory, gamma, reward_clip)
    advantages = generalized_advantages(tr.rewards, tr.discounts, values, tr.lambdas(gae_lambda))
    samples = Samples(
        observation=jax.tree.map(lambda x: x[:-1], trajectory.timestep.observation),
        first=trajectory.timestep.step_type[:-1] == FIRST,
        action=trajectory.action,
        old_log_prob=policy.log_prob(trajectory.extras, trajectory.action),
        old_value=values[:-1],
        advantage=advantages,
        target_return=advantages + values[:-1],
        valid=tr.valid,
        state=trajectory.state,
    )
    if not jax.tree.leaves(trajectory.state):  # Feed-forward: every transition stands alone.
        samples = jax.tree.map(lambda x: merge_leading_dims(x)[None], samples)
    return jax.lax.stop_gradient(samples)


def learn(
    state: LearnerState,
    trajectory: Trajectory,
    key: chex.PRNGKey,
    axis_name: collectives.AxisName = None,
    *,
    unroll_fn: Callable,
    optimizer: optax.GradientTransformation,
    gamma: float,
    gae_lambda: float,
    num_epochs: int,
    num_minibatches: int,
    normalize_advantages: bool,
    reward_clip: float = 0.0,
    chunk: bool = True,
    **loss_kwargs,
) -> tuple[LearnerState, dict]:
    """`num_epochs` x `num_minibatches` replicated gradient steps on one trajectory.

    With `normalize_advantages` each minibatch's advantages are normalised over
    the whole minibatch (every device's part of it) before its gradient is
    taken; with `chunk` that gradient is taken in slices on CPU
    (`optimizer.chunked_grad`; `optimizer.slices_gradients` says for which networks).
    """
    samples = make_samples(
        state.params, trajectory, unroll_fn=unroll_fn, gamma=gamma, gae_lambda=gae_lambda, reward_clip=reward_clip
    )
    loss_fn = functools.partial(loss, unroll_fn=unroll_fn, **loss_kwargs)

    def minibatch_step(state, batch):
        if normalize_advantages:
            batch = batch.replace(advantage=masked_normalize(batch.advantage, batch.valid, axis_name))
        return sgd_step(state, batch, loss_fn, optimizer, axis_name, chunk_axis=1 if chunk else None)

    what = "environments" if jax.tree.leaves(samples.state) else "transitions"
    return minibatch_epochs(state, samples, key, minibatch_step, num_epochs, num_minibatches, axis_name, what)


def build(config: ConfigDict, num_updates: int, centralised_critic: bool = False) -> Agent:
    """PPO as `config` describes it; `centralised_critic` gives it MAPPO's value function of the global state."""
    agent_config = config.agent
    optimizer = make_optimizer(
        shared_fields.optimizer_settings(config),
        gradient_steps=num_updates * agent_config.num_epochs * agent_config.num_minibatches,
    )
    ppo_learn = functools.partial(
        learn,
        unroll_fn=networks.unroll,
        optimizer=optimizer,
        chunk=slices_gradients(shared_fields.network_settings(config)),
        **hyperparameters(agent_config),
    )
    return network_agent(config, optimizer, ppo_learn, centralised_critic=centralised_critic)


registry.register("ppo", defaults=defaults, build=build, validate=validate)
