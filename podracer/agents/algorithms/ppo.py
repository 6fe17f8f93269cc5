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
from podracer.agents.algorithms.network_agent import hyperparameters, network_agent, shared_defaults, validate_shared
from podracer.agents.learning.optimizer import LearnerState, make_optimizer, sgd_step, slices_gradients
from podracer.agents.learning.returns import generalized_advantages
from podracer.agents.models import networks, policy
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.trajectory import Trajectory, merge_leading_dims, transitions
from podracer.config import field_checks, settings
from podracer.config.errors import ConfigError
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


def shuffled_indices(key: chex.PRNGKey, n: int) -> chex.Array:
    """A uniformly random order of `range(n)`, for minibatching.

    Like `jax.random.permutation`, it sorts random keys, ties keeping the previous
    order, over enough rounds that ties do not matter. It is 4x to 9x faster on
    CPU because each round sorts a single uint32 array: random high bits with the
    position packed into the low `b = ceil(log2 n)` bits. The rounds give at
    least 2b random bits in all, so the expected number of pairs tied in every
    round is below one half (one round up to n = 1024, three for 2048 x 128).
    """
    index_bits = max(1, (n - 1).bit_length())
    if index_bits > 24:
        raise ValueError(f"shuffled_indices supports n <= 2**24, got {n}")
    low_mask = jnp.uint32((1 << index_bits) - 1)
    positions = jnp.arange(n, dtype=jnp.uint32)
    rounds = -(-2 * index_bits // (32 - index_bits))
    order = jnp.arange(n, dtype=jnp.int32)
    for round_key in jax.random.split(key, rounds):
        packed = (jax.random.bits(round_key, (n,), jnp.uint32) & ~low_mask) | positions
        order = order[(jnp.sort(packed) & low_mask).astype(jnp.int32)]
    return order


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


def minibatch_epochs(
    state: Any,
    samples: Any,
    key: chex.PRNGKey,
    minibatch_step: Callable[[Any, Any], tuple[Any, dict]],
    num_epochs: int,
    num_minibatches: int,
    axis_name: collectives.AxisName,
    what: str = "transitions",
    gather_in_step: bool = False,
) -> tuple[Any, dict]:
    """`num_epochs` passes over this device's `samples` (leaves `[L, N, ...]`), each shuffling the N `what` along
    axis 1 and taking `minibatch_step(state, minibatch) -> (state, metrics)` on each of `num_minibatches` equal
    minibatches in turn; the metrics are averaged over every step. Each device shuffles its shard differently.

    The minibatches are sliced from a shuffled copy of the samples, or with
    `gather_in_step` gathered inside each step from the samples as they are,
    the same numbers either way. Gathering in the step skips a copy of the
    whole batch and a transposed one: PQN on MinAtar (2 x 32 steps on 128 of
    4,096 transitions) takes 5% less CPU an update. PPO's update on CartPole,
    with more fields per sample and chunked gradients, took 2-3% more that
    way (4 and 2,048 environments, the 2-core CI machine).

    Raises `ConfigError` naming `agent.num_minibatches` where N does not split into equal minibatches.
    """
    num_samples = jax.tree.leaves(samples)[0].shape[1]
    if num_samples % num_minibatches:
        raise ConfigError(
            "agent.num_minibatches",
            f"the {num_samples} {what} each device learns from per update do not split into "
            f"{num_minibatches} equal minibatches",
            f"choose a divisor of {num_samples}, or change unroll_length or the environments per device",
        )
    minibatch_size = num_samples // num_minibatches

    def gathered_step(state, indices: chex.Array):
        """`minibatch_step` on the `[L, minibatch_size, ...]` samples at `indices`."""
        return minibatch_step(state, jax.tree.map(lambda x: x[:, indices], samples))

    def split(x: chex.Array, order: chex.Array) -> chex.Array:
        """`[L, N, ...]` -> `[num_minibatches, L, N / num_minibatches, ...]`, along `order`."""
        return jnp.swapaxes(x[:, order].reshape((x.shape[0], num_minibatches, minibatch_size) + x.shape[2:]), 0, 1)

    def epoch(state, epoch_key):
        order = shuffled_indices(epoch_key, num_samples)
        if gather_in_step:
            return jax.lax.scan(gathered_step, state, order.reshape(num_minibatches, minibatch_size))
        return jax.lax.scan(minibatch_step, state, jax.tree.map(lambda x: split(x, order), samples))

    key = jax.random.fold_in(key, collectives.axis_index(axis_name))
    state, metrics = jax.lax.scan(epoch, state, jax.random.split(key, num_epochs))
    return state, jax.tree.map(jnp.mean, metrics)


def build(config: ConfigDict, num_updates: int, centralised_critic: bool = False) -> Agent:
    """PPO as `config` describes it; `centralised_critic` gives it MAPPO's value function of the global state."""
    agent_config = config.agent
    optimizer = make_optimizer(
        config.optimizer, gradient_steps=num_updates * agent_config.num_epochs * agent_config.num_minibatches
    )
    ppo_learn = functools.partial(
        learn,
        unroll_fn=networks.unroll,
        optimizer=optimizer,
        chunk=slices_gradients(settings.read(NetworkSettings, config.network)),
        **hyperparameters(agent_config),
    )
    return network_agent(config, optimizer, ppo_learn, centralised_critic=centralised_critic)


registry.register("ppo", defaults=defaults, build=build, validate=validate)
