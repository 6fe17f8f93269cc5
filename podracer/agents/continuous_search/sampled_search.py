"""Sampled MuZero's search: mctx over K actions sampled at each node (Hubert et al. 2021, Sections 3 and 4).

At every node the prediction function's policy pi(.|s) (a tanh-squashed
Gaussian, `sampled_model`) is sampled K times; a share of the samples
(`uniform_fraction`) may instead come uniformly from the action box, for
exploration, so that the proposal is beta = (1 - eps) pi + eps U. mctx
searches those K actions as its discrete action set, with the prior of
Section 3 (the sample-based policy improvement operator):

    prior(a_k) proportional to (beta_hat(a_k) / beta(a_k)) pi(a_k | s),

beta_hat the empirical distribution of the samples: 1/K for each of K
distinct continuous samples. With beta = pi the prior is uniform over the
samples; the policy's preferences are in which actions were drawn. Each
node's embedding carries its latent state and its K sampled actions, so the
`recurrent_fn` maps the index mctx chooses back to the continuous action the
dynamics read (`chosen_actions`). The search runs in [-1, 1]^D; the actions fed
to the dynamics and handed to the environment are in the spec's bounds
(`continuous_networks.to_bounds`).

`act` returns the environment's action and, as extras, the search policy
over the K root samples (visit counts, or Gumbel MuZero's improved policy),
the K samples themselves (in [-1, 1]^D) and the root's search value:
the policy target and the actions the policy loss evaluates
(`sampled_muzero.sampled_policy_loss`).
"""

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import mctx

from podracer.agents.algorithms import search
from podracer.agents.algorithms.search import SearchSettings
from podracer.agents.models import continuous_networks as cn
from podracer.agents.models import muzero_model, policy, support
from podracer.agents.models.networks import NetworkParams

UNIT_BOUND = 1.0 - 1e-6  # Samples are kept inside the open box, where atanh (and so log pi) is finite.


@dataclasses.dataclass(frozen=True)
class SampleSettings:
    """How each node's actions are sampled: the sampling fields of `config.agent`."""

    num_samples: int = 16  # K: actions sampled at each node, the search's action set.
    uniform_fraction: float = 0.0  # eps: the share of the K drawn uniformly from the action box, not from pi.

    @property
    def num_uniform(self) -> int:
        return round(self.uniform_fraction * self.num_samples)


def squashed_log_prob(outputs: dict, unit_action: chex.Array) -> chex.Array:
    """log pi(a | s) `[...]` of actions a `[..., D]` in (-1, 1)^D under a = tanh(u), u ~ N(mean, std) (`outputs`
    broadcast against them): log N(atanh(a); mean, std) - sum_i log(1 - a_i^2) (Haarnoja et al. 2018, eq. 21)."""
    clipped = jnp.clip(unit_action, -UNIT_BOUND, UNIT_BOUND)
    return policy.log_prob(outputs, jnp.arctanh(clipped)) - jnp.sum(jnp.log1p(-jnp.square(clipped)), axis=-1)


def sampled_prior_logits(log_pi: chex.Array, log_beta: chex.Array) -> chex.Array:
    """The search's prior over K distinct samples `[N, K]`, as normalised log-probabilities: (beta_hat / beta) pi
    with beta_hat = 1/K (Hubert et al. 2021, Section 3), from log pi and log beta of each sample `[N, K]`."""
    chex.assert_equal_shape([log_pi, log_beta])
    return jax.nn.log_softmax(log_pi - log_beta - math.log(log_pi.shape[-1]), axis=-1)


def sample_actions(key: chex.PRNGKey, outputs: dict, settings: SampleSettings) -> tuple[chex.Array, chex.Array]:
    """`(actions [N, K, D] in (-1, 1)^D, prior logits [N, K])`: K - U samples of pi (`outputs` `[N, D]`) and U of
    the uniform distribution on the box, U = `settings.num_uniform`; beta = (1 - U/K) pi + (U/K) 2^-D."""
    mean = outputs["mean"]
    chex.assert_rank(mean, 2)
    (n, d), k, u = mean.shape, settings.num_samples, settings.num_uniform
    policy_key, uniform_key = jax.random.split(key)
    noise = jax.random.normal(policy_key, (n, k - u, d))
    from_policy = jnp.tanh(mean[:, None] + jnp.exp(outputs["log_std"])[:, None] * noise)
    uniform = jax.random.uniform(uniform_key, (n, u, d), minval=-1.0, maxval=1.0)
    actions = jnp.clip(jnp.concatenate([from_policy, uniform], axis=1), -UNIT_BOUND, UNIT_BOUND)
    log_pi = squashed_log_prob(jax.tree.map(lambda x: x[:, None], outputs), actions)
    log_beta = log_pi
    if u:  # beta = (1 - eps) pi + eps 2^-D, eps = U / K: the density of a uniform sample on the box is 2^-D.
        log_beta = jnp.logaddexp(jnp.log1p(-u / k) + log_pi, math.log(u / k) - d * math.log(2.0))
    return actions, sampled_prior_logits(log_pi, log_beta)


def chosen_actions(sampled: chex.Array, index: chex.Array) -> chex.Array:
    """The continuous actions `[N, D]` the indices `[N]` mctx chose among each node's samples `[N, K, D]` name."""
    chex.assert_rank([sampled, index], [3, 1])
    return jnp.take_along_axis(sampled, index[:, None, None], axis=1)[:, 0]


def recurrent_fn(gamma: float, settings: SampleSettings) -> Callable:
    """mctx's `recurrent_fn`: the model's step after the chosen sample of each embedding `(latent, samples)`, and
    the new node's own K samples and prior."""

    def step(params: NetworkParams, key: chex.PRNGKey, action: chex.Array, embedding: tuple):
        latent, sampled = embedding
        unit_action = chosen_actions(sampled, action)
        next_latent, reward_logits = muzero_model.dynamics(params, latent, cn.to_bounds(unit_action, params.module))
        outputs, value_logits = muzero_model.predict(params, next_latent)
        next_sampled, prior_logits = sample_actions(key, outputs, settings)
        output = mctx.RecurrentFnOutput(
            reward=support.to_scalar(reward_logits),
            discount=jnp.full(action.shape, gamma, jnp.float32),
            prior_logits=prior_logits,
            value=support.to_scalar(value_logits),
        )
        return output, (next_latent, next_sampled)

    return step


def root(settings: SampleSettings) -> search.RootFn:
    """The search's roots for observations `[N, ...]`: latent states with their K samples, priors and values."""

    def root_fn(params: NetworkParams, observation: Any, key: chex.PRNGKey) -> tuple[mctx.RootFnOutput, None]:
        latent = muzero_model.represent(params, observation)
        outputs, value_logits = muzero_model.predict(params, latent)
        sampled, prior_logits = sample_actions(key, outputs, settings)
        value = support.to_scalar(value_logits)
        return mctx.RootFnOutput(prior_logits=prior_logits, value=value, embedding=(latent, sampled)), None

    return root_fn


def read_root_sample(output: mctx.PolicyOutput) -> tuple[chex.Array, dict]:
    """The chosen root sample (in [-1, 1]^D) and the extras of one search: `search.index_and_extras`' and the root's
    K samples `sampled_actions` `[K, D]`."""
    index, extras = search.index_and_extras(output)
    sampled = output.search_tree.embeddings[1][0, output.search_tree.ROOT_INDEX]
    return sampled[index], {**extras, "sampled_actions": sampled}


def make_act(search_settings: SearchSettings, root_fn: search.RootFn, recurrent: Callable) -> tuple[Callable, Callable]:
    """`(act, greedy_act)` of a search over sampled actions per environment (`search.act_by_search`) from `root_fn`'s
    roots, expanding with `recurrent` (each embedding holding the node's samples second): acting with the chosen
    sample, or greedily with the sample the search policy weighs most; actions in the spec's bounds (those of
    `params.module`). Sampled MuZero's searches its model (`root`, `recurrent_fn`); Sampled AlphaZero's the
    environment."""
    by_search = search.act_by_search(search_settings, root_fn, recurrent, read_root_sample)

    def act(params: NetworkParams, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
        unit_action, extras = by_search(params, observation, key)
        return cn.to_bounds(unit_action, params.module), extras

    def greedy_act(params: NetworkParams, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
        _, extras = by_search(params, observation, key)
        best = jnp.argmax(extras["search_policy"], axis=-1).astype(jnp.int32)
        return cn.to_bounds(chosen_actions(extras["sampled_actions"], best), params.module), extras

    return act, greedy_act
