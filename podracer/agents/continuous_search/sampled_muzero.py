"""Sampled MuZero: MuZero for continuous actions, searching over K actions sampled at each node.

Hubert et al. (2021), "Learning and Planning in Complex Action Spaces". The
search (`sampled_search`) runs mctx over K samples of the policy at each
node, with the prior (beta_hat / beta) pi of Section 3; everything else is
MuZero's (`podracer.agents.algorithms.muzero`, through its `Variant`): the
replay of sequences, the n-step value targets, the support of values and
rewards, the unrolled model and its value and reward losses, the search
settings. The model (`sampled_model`) has a tanh-squashed Gaussian policy and
reads real actions. The policy loss at each unroll step k is the
cross-entropy of the sample-based improved policy, the search's policy
pi_hat over the K actions a_1..a_K sampled at the root of step t + k (its
normalised visit counts; Gumbel MuZero's improved policy with
`search = "gumbel"`), against the model's policy evaluated at those actions
(Section 4, the policy trained towards the search's distribution over the
sampled actions):

    l^p = -sum_{i=1..K} pi_hat(a_i) log pi(a_i | s^k).

The target is a weighting of K points, not a distribution over the whole
action space: the loss raises log pi where the search spent its visits.
"""

from typing import Any

import chex
import jax
import jax.numpy as jnp
from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import muzero, shared_fields
from podracer.agents.continuous_search import sampled_model, sampled_search
from podracer.agents.continuous_search.sampled_search import SampleSettings
from podracer.agents.models import continuous_networks as cn
from podracer.config import field_checks, settings


def defaults() -> ConfigDict:
    config = muzero.defaults()
    config.update(settings.defaults(SampleSettings))
    return config


def validate(config: ConfigDict) -> None:
    muzero.validate(config)
    field_checks.integer(config, "agent.num_samples", at_least=2, example=16)
    field_checks.fraction(config, "agent.uniform_fraction", example=0.25)


def sampled_policy_loss(policy_outputs: dict, acting: dict) -> chex.Array:
    """l^p `[S]` (module docstring): -sum_i pi_hat_i log pi(a_i | s), the policy `policy_outputs` `{"mean",
    "log_std"}` `[S, D]` at the K samples `acting["sampled_actions"]` `[S, K, D]`, weighted by the search policy
    `acting["search_policy"]` `[S, K]` (Hubert et al. 2021, Section 4)."""
    sampled, weights = acting["sampled_actions"], acting["search_policy"]
    chex.assert_rank([sampled, weights], [3, 2])
    log_pi = sampled_search.squashed_log_prob(jax.tree.map(lambda x: x[:, None], policy_outputs), sampled)
    return -(weights * log_pi).sum(axis=-1)


def stored(sample_settings: SampleSettings) -> Any:
    """`muzero.Variant.stored`: a real action vector `[D]`, and MuZero's extras over the K samples, with the samples
    (in [-1, 1]^D) `[K, D]`."""

    def stored_fn(action_spec: Any) -> tuple:
        (k, d), f32 = (sample_settings.num_samples, cn.bounds(action_spec)[0]), jnp.float32
        extras = {
            "search_policy": jax.ShapeDtypeStruct((k,), f32),
            "sampled_actions": jax.ShapeDtypeStruct((k, d), f32),
            "root_value": jax.ShapeDtypeStruct((), f32),
        }
        return jax.ShapeDtypeStruct((d,), f32), extras

    return stored_fn


def build(config: ConfigDict, num_updates: int) -> Agent:
    network, support_size = shared_fields.network_settings(config), config.agent.support_size
    sample_settings = settings.read(SampleSettings, config.agent)
    act, greedy_act = sampled_search.make_act(
        shared_fields.search_settings(config),
        sampled_search.root(sample_settings),
        sampled_search.recurrent_fn(config.agent.gamma, sample_settings),
    )

    def make_model(observation_spec: Any, action_spec: Any) -> Any:
        return sampled_model.make_model(network, observation_spec, action_spec, support_size)

    variant = muzero.Variant(make_model, stored(sample_settings), act, greedy_act, sampled_policy_loss)
    return muzero.build_variant(config, num_updates, variant)


registry.register(
    "sampled_muzero",
    defaults=defaults,
    build=build,
    validate=validate,
    check_environment=sampled_model.refuse_discrete,
    config_defaults=shared_fields.REPLAY_CONFIG_DEFAULTS,
)
