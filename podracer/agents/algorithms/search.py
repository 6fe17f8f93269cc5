"""Acting by Monte Carlo tree search with mctx: MuZero's `act` in its learned model, and any model's (`act_by_search`).

Each environment's action comes from a search from its own observation
(Schrittwieser et al. 2020, Section 3 and Appendix B): the representation
function gives the root's latent state, the prediction function its prior
and value, and every simulation expands one node with the dynamics function
(`mctx.RecurrentFnOutput`: predicted reward, gamma as the discount, the
prior and value of the new latent state). Values and rewards are the
scalars of the model's categorical predictions (`support.to_scalar`).

Two searches, chosen by `agent.search`:
- `"muzero"`: `mctx.muzero_policy`, pUCT selection with Dirichlet noise at
  the root; the action is sampled from the root's visit counts at
  `temperature`, and the search policy is those visit counts, normalised.
- `"gumbel"`: `mctx.gumbel_muzero_policy` (Danihelka et al. 2022, "Policy
  improvement by planning with Gumbel"), Sequential Halving over
  `max_num_considered_actions` Gumbel-sampled actions at the root; the search
  policy is the improved policy softmax(logits + sigma(completed Q)). mctx
  recommends it for few simulations: it improves the policy even with 2.

`act` returns the search policy and the root's search value as its extras;
MuZero learns its policy from the first and bootstraps its value targets
from the second. `act_by_search` serves a search in another model (AlphaZero
steps the game's own rules, `podracer.agents.algorithms.alphazero`): its own root and
`recurrent_fn`, and the actions that are illegal at the root. Every environment searches with its own key (the search is
vmapped over environments), so its action does not depend on the batch.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import mctx

from podracer.agents.models import muzero_model, support
from podracer.agents.models.networks import NetworkParams

SEARCHES = ("muzero", "gumbel")


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """A search's settings: the search fields of `config.agent` (`shared_fields.search_settings` reads them)."""

    search: str = "muzero"  # One of SEARCHES: "muzero" (pUCT, visit counts) or "gumbel" (for few simulations).
    num_simulations: int = 50
    temperature: float = 1.0  # muzero: actions are sampled from visit counts ** (1 / temperature).
    dirichlet_alpha: float = 0.25  # muzero: the root's exploration noise (Appendix C: 0.25 for Atari).
    dirichlet_fraction: float = 0.25
    pb_c_init: float = 1.25  # muzero: pUCT's exploration constants (Appendix B, eq. 2).
    pb_c_base: float = 19652.0
    max_num_considered_actions: int = 16  # gumbel: actions Sequential Halving starts from.
    gumbel_scale: float = 1.0  # gumbel: 0 makes the search deterministic.


def recurrent_fn(gamma: float) -> Callable:
    """mctx's `recurrent_fn`: one step of the learned model from the latent states `embedding` `[N, ...]`."""

    def step(params: NetworkParams, key: chex.PRNGKey, action: chex.Array, embedding: chex.Array):
        del key  # The model is deterministic.
        latent, reward_logits = muzero_model.dynamics(params, embedding, action)
        prior_logits, value_logits = muzero_model.predict(params, latent)
        output = mctx.RecurrentFnOutput(
            reward=support.to_scalar(reward_logits),
            discount=jnp.full(action.shape, gamma, jnp.float32),
            prior_logits=prior_logits,
            value=support.to_scalar(value_logits),
        )
        return output, latent

    return step


def root(params: NetworkParams, observation: Any) -> mctx.RootFnOutput:
    """The search's root for observations `[N, ...]`: their latent states, prior logits and values."""
    latent = muzero_model.represent(params, observation)
    prior_logits, value_logits = muzero_model.predict(params, latent)
    return mctx.RootFnOutput(prior_logits=prior_logits, value=support.to_scalar(value_logits), embedding=latent)


def planner(search_settings: SearchSettings, recurrent: Callable) -> Callable:
    """`plan(params, root, key, invalid_actions=None) -> mctx.PolicyOutput`: the search `search_settings` names over a
    batch of roots, expanding nodes with `recurrent` (mctx's `recurrent_fn`); `invalid_actions` (bool `[N, A]`,
    True = illegal) are never searched or chosen at the root."""

    def plan(params: Any, root_output: mctx.RootFnOutput, key: chex.PRNGKey, invalid_actions: Any = None):
        if search_settings.search == "gumbel":
            return mctx.gumbel_muzero_policy(
                params,
                key,
                root_output,
                recurrent,
                num_simulations=search_settings.num_simulations,
                invalid_actions=invalid_actions,
                max_num_considered_actions=search_settings.max_num_considered_actions,
                gumbel_scale=search_settings.gumbel_scale,
            )
        return mctx.muzero_policy(
            params,
            key,
            root_output,
            recurrent,
            num_simulations=search_settings.num_simulations,
            invalid_actions=invalid_actions,
            dirichlet_fraction=search_settings.dirichlet_fraction,
            dirichlet_alpha=search_settings.dirichlet_alpha,
            pb_c_init=search_settings.pb_c_init,
            pb_c_base=search_settings.pb_c_base,
            temperature=search_settings.temperature,
        )

    return plan


def search(search_settings: SearchSettings, gamma: float) -> Callable:
    """MuZero's `search(params, root, key) -> mctx.PolicyOutput`, in its learned model, over a batch of roots."""
    return planner(search_settings, recurrent_fn(gamma))


RootFn = Callable[[Any, Any, chex.PRNGKey], tuple[mctx.RootFnOutput, Any]]
"""`(params, observation [N, ...], key) -> (mctx.RootFnOutput, invalid_actions [N, A] or None)`: a search's roots
(the key for a root that samples, as Sampled MuZero's does)."""


def index_and_extras(output: mctx.PolicyOutput) -> tuple[chex.Array, dict]:
    """The action index and extras `act` keeps of one search (a batch of one root): the search policy, the root's
    search value."""
    extras = {"search_policy": output.action_weights[0], "root_value": output.search_tree.summary().value[0]}
    return output.action[0].astype(jnp.int32), extras


def act_by_search(
    search_settings: SearchSettings, root_fn: RootFn, recurrent: Callable, read: Callable = index_and_extras
) -> Callable:
    """`act(params, observation [B, ...], key [B]) -> (action [B], extras)`, a search per environment from its
    `root_fn` root, expanding with `recurrent`; `read` takes the action and extras from each search's output."""
    plan = planner(search_settings, recurrent)

    def act(params: Any, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
        def one_environment(single_observation: Any, environment_key: chex.PRNGKey):
            root_key = jax.random.fold_in(environment_key, 1)  # The search itself keeps `environment_key`.
            observations = jax.tree.map(lambda x: x[None], single_observation)
            root_output, invalid_actions = root_fn(params, observations, root_key)
            return read(plan(params, root_output, environment_key, invalid_actions))

        return jax.vmap(one_environment)(observation, key)

    return act


def make_act(search_settings: SearchSettings, gamma: float) -> Callable:
    """MuZero's `act(params, observation [B, ...], key [B]) -> (action [B], extras)`, a search per environment."""
    return act_by_search(
        search_settings, lambda params, observation, key: (root(params, observation), None), recurrent_fn(gamma)
    )


def greedy(act: Callable) -> Callable:
    """MuZero's `greedy_act`: the same search, then the action it weighs most (the argmax of the search policy,
    visit counts or Gumbel MuZero's improved policy) rather than the action the search draws."""

    def greedy_act(params: NetworkParams, observation: Any, key: chex.PRNGKey) -> tuple[chex.Array, dict]:
        _, extras = act(params, observation, key)
        return jnp.argmax(extras["search_policy"], axis=-1).astype(jnp.int32), extras

    return greedy_act
