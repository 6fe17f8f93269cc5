"""Sampled AlphaZero: a search over K actions sampled at each node, stepping the environment itself as its model.

Hubert et al. (2021), "Learning and Planning in Complex Action Spaces", apply
their sample-based search to AlphaZero as well as MuZero: the search is
Sampled MuZero's (`sampled_search`: K samples of the policy at each node,
a share of them uniform over the action box, the prior (beta_hat / beta) pi
of Section 3, mctx over the samples), but each edge is a step of the
environment's own rules rather than of a learned model, as AlphaZero's
search steps the game (`podracer.agents.algorithms.alphazero`). The
environment must be a pure-JAX one that puts its state in its observation
(`env.kwargs.observe_state`, `podracer.envs.observed_state`): a node's
embedding is that state, with the node's K samples and whether an episode
ended above it, and `recurrent_fn` steps it with the sample mctx chose
(`ObservesState.model_step`). Its reward is the environment's, its discount
gamma, 0 where the step terminates the episode (a time limit's truncation
keeps gamma: the search plans past it, as the value targets bootstrap past
it); below a terminal step every reward and value is 0. The network
(`sampled_model.PolicyValueNetwork`) gives each node's Gaussian policy over
u (a = tanh(u)) and its value over MuZero's support; it reads the
environment's observation, never the state.

Learning is MuZero's without a model to unroll: sequences of n + 1
transitions from a replay buffer of what acting stored (the state left
out), the n-step return z_t bootstrapped from the stored search value or
the current network's value (`value_bootstrap`), as MuZero's targets
(`muzero.targets` with no unroll steps), and at the first step of each
sequence

    l = l^p + value_cost * l^v,   l^p = -sum_{i=1..K} pi_hat(a_i) log pi(a_i | s_t),

the policy loss Sampled MuZero's (`sampled_muzero.sampled_policy_loss`: the
search's policy over the K root samples, against the network's policy at
them), l^v the cross-entropy of the value logits against z_t's two-hot
projection on the support. A prioritised buffer samples by |v - z_t|.

Anakin only: the search steps the environment inside the compiled program
the agent acts in, which Sebulba's host environments cannot be.
"""

import functools
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import mctx
from ml_collections import ConfigDict

from podracer import envs
from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import muzero, shared_fields
from podracer.agents.continuous_search import sampled_model, sampled_muzero, sampled_search
from podracer.agents.continuous_search.sampled_search import SampleSettings
from podracer.agents.learning import replay
from podracer.agents.models import continuous_networks as cn
from podracer.agents.models import support
from podracer.agents.trajectory import Trajectory, without_observed
from podracer.config import field_checks, settings
from podracer.config.errors import ConfigError
from podracer.envs.actions import ENV_STATE, without_entry
from podracer.envs.env_registry import with_config_kwargs
from podracer.envs.observed_state import ObservesState


def defaults() -> ConfigDict:
    config = {name: value for name, value in muzero.defaults().items() if name != "unroll_steps"}
    return ConfigDict({**config, **settings.defaults(SampleSettings)})


def validate(config: ConfigDict) -> None:
    muzero.validate_targets(config)
    field_checks.integer(config, "agent.num_samples", at_least=2, example=16)
    field_checks.fraction(config, "agent.uniform_fraction", example=0.25)
    shared_fields.require_feed_forward(config, "Sampled AlphaZero's network evaluates one state at a time")
    if config.architecture != "anakin":
        raise ConfigError(
            "architecture",
            "Sampled AlphaZero's search steps the environment inside the program it acts in: a pure-JAX one, on Anakin",
            "set --config.architecture=anakin, or search a learned model with --config.agent.name=sampled_muzero",
        )
    if config.env.kwargs.get("observe_state") is not True:
        raise ConfigError(
            "env.kwargs.observe_state",
            f"Sampled AlphaZero searches from the environment's state, which {config.env.name} observes only when asked",
            "set --config.env.kwargs.observe_state=True",
        )


def loss_settings(agent_config: ConfigDict) -> muzero.LossSettings:
    """MuZero's target and loss settings with no unroll steps: the loss is its first step's."""
    return settings.read(muzero.LossSettings, {**agent_config, "unroll_steps": 0})


def evaluate(params: cn.Model, observation: Any) -> tuple[dict, chex.Array]:
    """`(policy {"mean", "log_std"} [N, D], value logits [N, bins])` of observations `[N, ...]`."""
    return params(observation)


def loss(params: cn.Model, sample: replay.Sample, targets_settings: muzero.LossSettings) -> tuple[chex.Array, tuple]:
    """The module docstring's loss at the first step of each sequence, importance-weighted; aux `(metrics,
    priorities)`. Sequences of n + 2 timesteps (`muzero.targets`' with no unroll steps)."""
    trajectory, observation = sample.trajectory, sample.trajectory.timestep.observation
    bootstrap_values = None
    if targets_settings.value_bootstrap == "model":  # The current network's value of the observation at t + n.
        _, bootstrap_logits = evaluate(params, jax.tree.map(lambda x: x[targets_settings.n_step], observation))
        bootstrap_values = support.to_scalar(bootstrap_logits)[None]
    target = jax.lax.stop_gradient(muzero.targets(trajectory, targets_settings, bootstrap_values))
    policy_outputs, value_logits = evaluate(params, jax.tree.map(lambda x: x[0], observation))
    first = jax.tree.map(lambda x: x[0], target.acting)
    policy = target.in_episode[0] * sampled_muzero.sampled_policy_loss(policy_outputs, first)
    value_target = support.to_categorical(target.values[0], targets_settings.support_size)
    value = target.in_episode[0] * muzero.cross_entropy(value_target, value_logits)
    total = jnp.mean(sample.weights * (policy + targets_settings.value_cost * value))
    metrics = {
        "loss": total,
        "policy_loss": jnp.mean(policy),
        "value_loss": jnp.mean(value),
        "value_target": jnp.mean(target.values[0]),
    }
    predicted = jax.lax.stop_gradient(support.to_scalar(value_logits))
    return total, (metrics, jnp.abs(predicted - target.values[0]) * target.in_episode[0])


def root(sample_settings: SampleSettings) -> Callable:
    """The search's roots for observations `[N, ...]` holding the environment's state: the network's K samples, their
    prior and the value; each embedding `(state, samples, ended=False)`."""

    def root_fn(params: cn.Model, observation: Any, key: chex.PRNGKey) -> tuple[mctx.RootFnOutput, None]:
        policy, value_logits = evaluate(params, observation)
        sampled, prior_logits = sampled_search.sample_actions(key, policy, sample_settings)
        ended = jnp.zeros(sampled.shape[:1], bool)
        embedding = (observation[ENV_STATE], sampled, ended)
        value = support.to_scalar(value_logits)
        return mctx.RootFnOutput(prior_logits=prior_logits, value=value, embedding=embedding), None

    return root_fn


def rules(env: ObservesState, gamma: float, sample_settings: SampleSettings) -> Callable:
    """mctx's `recurrent_fn` with the environment's own step as the model (module docstring): embeddings
    `(state [N, ...], samples [N, K, D], ended [N])`."""

    def step(params: cn.Model, key: chex.PRNGKey, action: chex.Array, embedding: tuple):
        state, sampled, ended = embedding
        unit_action = sampled_search.chosen_actions(sampled, action)
        state, timestep = jax.vmap(env.model_step)(state, cn.to_bounds(unit_action, params.module))
        policy, value_logits = evaluate(params, timestep.observation)
        next_sampled, prior_logits = sampled_search.sample_actions(key, policy, sample_settings)
        terminal = ended | (timestep.discount == 0.0)  # No reward or value follows this node.
        output = mctx.RecurrentFnOutput(
            reward=jnp.where(ended, 0.0, timestep.reward),
            discount=jnp.where(terminal, 0.0, gamma),
            prior_logits=prior_logits,
            value=jnp.where(terminal, 0.0, support.to_scalar(value_logits)),
        )
        return output, (state, next_sampled, terminal)

    return step


def spec_signature(spec: Any) -> tuple:
    """A spec's structure and every leaf's shape and dtype: what tells one environment's observations from another's."""
    leaves, structure = jax.tree.flatten(spec)
    return structure, [(leaf.shape, leaf.dtype) for leaf in leaves]


def check_model(observation_spec: Any, env: ObservesState) -> None:
    """`ConfigError` unless the observations carry the state of the environment the search steps."""
    if not isinstance(observation_spec, dict) or ENV_STATE not in observation_spec:
        raise ConfigError(
            "env.kwargs.observe_state",
            "Sampled AlphaZero searches from the environment's state, and the environment does not observe it",
            "set --config.env.kwargs.observe_state=True",
        )
    if spec_signature(observation_spec) != spec_signature(env.observation_spec()):
        raise ConfigError(
            "env.name",
            "the environment trained on is not the one config.env.name builds, whose step the search runs",
            "train on the config's environment (pass no other), or register yours with podracer.envs.register",
        )


def build(config: ConfigDict, num_updates: int) -> Agent:
    agent_config, network = config.agent, shared_fields.network_settings(config)
    env = with_config_kwargs(config, envs.make, config.env.name)  # Its step is the search's model.
    sample_settings = settings.read(SampleSettings, agent_config)
    targets_settings = loss_settings(agent_config)
    replay_setup = shared_fields.replay_setup(config, agent_config.n_step + 2)
    sequence_loss = functools.partial(loss, targets_settings=targets_settings)
    gradient_step, optimizer = muzero.make_gradient_step(config, num_updates, sequence_loss)

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> muzero.MuZeroState:
        check_model(observation_spec, env)
        stored_spec = without_entry(observation_spec, ENV_STATE)
        module = sampled_model.make_policy_value(network, stored_spec, action_spec, agent_config.support_size)
        params = cn.init_model(key, module, stored_spec)
        action, extras = sampled_muzero.stored(sample_settings)(action_spec)
        return muzero.MuZeroState(
            params=params,
            opt_state=optimizer.init(params),
            replay=replay.init(replay_setup, stored_spec, action, extras),
            learn_calls=jnp.int32(0),
        )

    replay_learn = replay.make_learn(replay_setup, gradient_step)

    def learn(state: Any, trajectory: Trajectory, key: chex.PRNGKey, axis_name: str | None = None):
        return replay_learn(state, without_observed(trajectory, ENV_STATE), key, axis_name)

    act, greedy_act = sampled_search.make_act(
        shared_fields.search_settings(config),
        root(sample_settings),
        rules(env, agent_config.gamma, sample_settings),
    )
    return Agent(init, act, learn, lambda state: state.params, greedy_act=greedy_act)


registry.register(
    "sampled_alphazero",
    defaults=defaults,
    build=build,
    validate=validate,
    check_environment=sampled_model.refuse_discrete,
    config_defaults={"env.kwargs.observe_state": True, **shared_fields.REPLAY_CONFIG_DEFAULTS},
)
