"""AlphaZero: self-play on Pgx's two-player games, searching with the game's own rules, learning from a replay buffer.

Silver et al. (2018), "A general reinforcement learning algorithm that masters
chess, shogi, and Go through self-play", with the search of Gumbel AlphaZero
(Danihelka et al. 2022, "Policy improvement by planning with Gumbel"), mctx's
recommendation and Pgx's own AlphaZero example; `agent.search = "muzero"` is
the paper's pUCT search with Dirichlet noise at the root instead.

One agent plays every seat. Pgx's adapter with `env.kwargs.self_play = True`
puts the game's state in the observation (`GAME_STATE`), so `act` searches
from it with the game's `step` as the model (`search.act_by_search`): each
edge's reward is the mover's reward, its discount -1 (the player to move
alternates, so a value, always from the mover's side, changes sign from one
node to the next) and 0 where the game ends, where the value is 0 too. The
root never searches or plays an illegal move (`invalid_actions`), and every
node's prior is the policy head masked by its own legal moves. The network
is the policy-value network of the other agents (`networks.ActorCritic`, the
value squashed into [-1, 1] by tanh) on Pgx's observation planes, which are
already the mover's view; it never reads the game state.

Learning (Silver et al. 2017, "Mastering the game of Go without human
knowledge", eq. 1, as in the 2018 paper):

    l = (z - v)^2 * value_cost - pi^T log p,

pi the search policy `act` stored, z the game's outcome from the side of the
player to move. With the reward only at the end of a zero-sum game, z is the
return with discount -1, computed backwards over a sampled sequence and cut
at every game's end: z_t = r_{t+1} - z_{t+1}, z_t = r_{t+1} where the move
ends the game (`outcomes`). The paper's L2 term c ||theta||^2 is not
included. Each `learn` call adds its rollout to the buffer and takes
`replay_ratio` gradient steps (`replay.make_learn`), each on the first step
of `batch_size` sampled sequences of `outcome_horizon` moves, uniformly, as
the paper sampled its latest games: a step whose game does not end within
the sequence (a game longer than the horizon) has no value target. The
buffer keeps the observations without the game state.
"""

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import mctx
from flax import struct
from ml_collections import ConfigDict

from podracer import envs
from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms import search, shared_fields
from podracer.agents.algorithms.muzero import cross_entropy
from podracer.agents.learning import replay
from podracer.agents.learning.optimizer import make_optimizer, sgd_step
from podracer.agents.learning.returns import lambda_returns
from podracer.agents.models import networks
from podracer.agents.trajectory import Trajectory, transitions, without_observed
from podracer.config import field_checks
from podracer.config.errors import ConfigError
from podracer.devices.per_device import PerDevice
from podracer.envs.actions import ACTION_MASK, GAME_STATE, without_entry
from podracer.envs.env_registry import split_suite, with_config_kwargs
from podracer.envs.timestep import LAST


def defaults() -> ConfigDict:
    return ConfigDict(
        {
            "outcome_horizon": 64,  # Moves a sampled sequence looks ahead for its game's end (module docstring).
            "value_cost": 1.0,  # Weight of the value loss (1 in the paper's eq. 1).
            **shared_fields.SEARCH_DEFAULTS,
            "search": "gumbel",  # Gumbel AlphaZero (Danihelka et al. 2022); "muzero": the paper's pUCT.
            "num_simulations": 32,
            **shared_fields.REPLAY_DEFAULTS,
        }
    )


def validate(config: ConfigDict) -> None:
    field_checks.integer(config, "agent.outcome_horizon", at_least=1, example=42)
    field_checks.number(config, "agent.value_cost", example=1.0, at_least=0.0)
    shared_fields.validate_search(config)
    shared_fields.validate_replay(config)
    if config.agent.prioritised:
        raise ConfigError(
            "agent.prioritised",
            "AlphaZero samples its buffer uniformly, as the paper samples its latest games",
            "set --config.agent.prioritised=False",
        )
    shared_fields.require_feed_forward(config, "AlphaZero's search evaluates positions one at a time")
    game = config.env.name
    if not isinstance(game, str) or split_suite(game)[0] != "pgx":
        raise ConfigError(
            "env.name",
            f"AlphaZero searches with a Pgx game's own rules and plays both sides; {game!r} is not a Pgx game",
            "choose a two-player Pgx game: --config.env.name=pgx:tic_tac_toe, pgx:connect_four, pgx:go_9x9, ...",
        )
    if config.env.kwargs.get("self_play") is not True:
        raise ConfigError(
            "env.kwargs.self_play",
            f"AlphaZero searches from the game's state, which {game} puts in the observation only for self-play",
            "set --config.env.kwargs.self_play=True",
        )


@struct.dataclass
class AlphaZeroState:
    params: networks.NetworkParams  # The policy-value network.
    opt_state: Any
    replay: PerDevice  # Each device's own `replay.Replay`: observations without the game state, search policies.
    learn_calls: chex.Array  # int32: `learn` calls so far.


def evaluate(params: networks.NetworkParams, observation: Any) -> tuple[chex.Array, chex.Array]:
    """`(prior logits [N, A], masked by the observation's legal moves; value [N] in [-1, 1], the mover's)`."""
    _, (outputs, value) = params.step((), observation)
    return outputs["logits"], jnp.tanh(value)


def root(params: networks.NetworkParams, observation: Any, key: chex.PRNGKey) -> tuple[mctx.RootFnOutput, chex.Array]:
    """The search's roots for observations `[N, ...]` (with the game state), and their illegal moves."""
    del key  # The root is the game's own state: nothing to sample.
    logits, value = evaluate(params, observation)
    root_output = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=observation[GAME_STATE])
    return root_output, ~observation[ACTION_MASK]


def rules(game: Any) -> Callable:
    """mctx's `recurrent_fn` with the game's own `step` as the model: embeddings are Pgx states `[N]`."""

    def step(params: networks.NetworkParams, key: chex.PRNGKey, action: chex.Array, state: Any):
        after = jax.vmap(game.pgx_env.step)(state, action, jax.random.split(key, action.shape[0]))
        logits, value = evaluate(params, game.observe(after))
        mover_reward = jnp.take_along_axis(after.rewards, state.current_player[:, None], axis=1)[:, 0]
        output = mctx.RecurrentFnOutput(
            reward=mover_reward,
            discount=jnp.where(after.terminated, 0.0, -1.0),  # The next node's value is the other player's.
            prior_logits=logits,
            value=jnp.where(after.terminated, 0.0, value),
        )
        return output, after

    return step


def outcomes(trajectory: Trajectory) -> tuple[chex.Array, chex.Array]:
    """`(z [L - 1, S], known [L - 1, S])`: each step's game outcome for the player to move, and 1 where it is known.

    z_t = r_{t+1} - z_{t+1}, cut where the game ends (z_t = r_{t+1}), is the
    lambda-return with discount -1 (0 at termination), lambda 1 within a game
    and every value 0. It is known where the game terminates (discount 0)
    within the sequence; not where the sequence ends first, or a step limit
    truncates the game.
    """
    tr = transitions(trajectory, gamma=-1.0)
    unknown_tail = jnp.zeros_like(trajectory.timestep.reward)
    z = lambda_returns(tr.rewards, tr.discounts, unknown_tail, tr.lambdas(1.0))
    terminal = tr.ends_episode * (trajectory.timestep.discount[1:] == 0.0)
    known = lambda_returns(terminal, jnp.ones_like(terminal), unknown_tail, tr.lambdas(1.0))  # The same recursion.
    return z, known


def loss(params: networks.NetworkParams, sample: replay.Sample, value_cost: float) -> tuple[chex.Array, dict]:
    """The module docstring's loss at the first step of each sampled sequence, masked terms counted as zero."""
    trajectory = sample.trajectory
    z, known = outcomes(trajectory)
    logits, value = evaluate(params, jax.tree.map(lambda x: x[0], trajectory.timestep.observation))
    decision = (trajectory.timestep.step_type[0] != LAST).astype(jnp.float32)  # A LAST step chose nothing.
    policy_loss = jnp.mean(decision * cross_entropy(trajectory.extras["search_policy"][0], logits))
    value_loss = jnp.mean(decision * known[0] * (z[0] - value) ** 2)
    total = policy_loss + value_cost * value_loss
    return total, {"loss": total, "policy_loss": policy_loss, "value_loss": value_loss}


def check_game(observation_spec: Any, game: Any) -> None:
    """Raises `ConfigError` unless the observations hold the state of the game the search plays."""
    if not isinstance(observation_spec, dict) or GAME_STATE not in observation_spec:
        raise ConfigError(
            "env.kwargs.self_play",
            "AlphaZero searches from the game's state, and the environment does not observe it",
            "use a two-player Pgx game with --config.env.kwargs.self_play=True",
        )
    if observation_spec[GAME_STATE].env_id != game.task:
        raise ConfigError(
            "env.name",
            f"the environment plays pgx:{observation_spec[GAME_STATE].env_id}, the search pgx:{game.task}",
            "pass the environment the config names (or none)",
        )


def build(config: ConfigDict, num_updates: int) -> Agent:
    agent_config, network = config.agent, shared_fields.network_settings(config)
    game = with_config_kwargs(config, envs.make, config.env.name)  # Its rules are the search's model.
    replay_setup = shared_fields.replay_setup(config, agent_config.outcome_horizon + 1)
    optimizer = make_optimizer(
        shared_fields.optimizer_settings(config), gradient_steps=num_updates * agent_config.replay_ratio
    )

    def init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> AlphaZeroState:
        check_game(observation_spec, game)
        stored_spec = without_entry(observation_spec, GAME_STATE)
        params = networks.init_params(key, network, stored_spec, action_spec)
        extras = {
            "search_policy": jax.ShapeDtypeStruct((action_spec.num_values,), jnp.float32),
            "root_value": jax.ShapeDtypeStruct((), jnp.float32),
        }
        return AlphaZeroState(
            params=params,
            opt_state=optimizer.init(params),
            replay=replay.init(replay_setup, stored_spec, jax.ShapeDtypeStruct((), jnp.int32), extras),
            learn_calls=jnp.int32(0),
        )

    def gradient_step(state: AlphaZeroState, sample: replay.Sample, axis_name) -> tuple[AlphaZeroState, dict, Any]:
        state, metrics = sgd_step(state, sample, lambda p, s: loss(p, s, agent_config.value_cost), optimizer, axis_name)
        return state, metrics, jnp.zeros_like(sample.weights)  # A uniform buffer keeps no priorities.

    replay_learn = replay.make_learn(replay_setup, gradient_step)

    def learn(state: AlphaZeroState, trajectory: Trajectory, key: chex.PRNGKey, axis_name: str | None = None):
        return replay_learn(state, without_observed(trajectory, GAME_STATE), key, axis_name)

    act = search.act_by_search(shared_fields.search_settings(config), root, rules(game))
    return Agent(
        init=init,
        act=act,
        learn=learn,
        acting_params=lambda state: state.params,
        greedy_act=search.greedy(act),
    )


registry.register(
    "alphazero",
    defaults=defaults,
    build=build,
    validate=validate,
    config_defaults={
        "env.name": "pgx:tic_tac_toe",  # A game, played both sides.
        "env.kwargs.self_play": True,
        **shared_fields.REPLAY_CONFIG_DEFAULTS,
    },
)
