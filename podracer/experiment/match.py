"""`podracer evaluate --opponent`'s work: a trained agent plays a two-player game against a fixed opponent.

The opponent is a uniformly random legal player or another run's trained
agent. The trained agent moves first in even-numbered games and second in the
odd ones (Pgx draws each game's seats at random, so seats are read from who
moves first). Every agent sees the observations of its own run's environment
of the same game (an AlphaZero run's hold the game's state, a PPO run's do
not), and acts greedily or sampling, as `podracer evaluate` does. All games
run together in one compiled loop, until every game has ended or
`max_steps` moves are made. The result counts the games the trained agent
won, drew and lost, by whether it moved first, from the rewards Pgx gives
each seat.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

from podracer.config.errors import ConfigError, UsageError
from podracer.envs.env_registry import split_suite
from podracer.envs.timestep import LAST
from podracer.experiment.trained import TrainedAgent, load

RANDOM = "random"


@dataclasses.dataclass(frozen=True)
class Player:
    """One side of a match: `choose(params, games, keys) -> moves`, for Pgx states `[N]` and keys `[N]`, and the
    `params` it is given (arguments of the compiled match, not constants inside it)."""

    choose: Callable[[Any, Any, chex.PRNGKey], chex.Array]
    params: Any = None


@dataclasses.dataclass(frozen=True)
class Results:
    """Games won, drawn and lost by the trained agent, `[2]` each: moving first, then second; and unfinished games."""

    wins: np.ndarray
    draws: np.ndarray
    losses: np.ndarray
    unfinished: int  # Games still running after max_steps, in none of the counts.

    def line(self, seat: int | None = None) -> str:
        """`W wins, D draws, L losses` over both seats, or for one (0: moving first)."""
        pick = slice(None) if seat is None else slice(seat, seat + 1)
        wins, draws, losses = (int(np.sum(counts[pick])) for counts in (self.wins, self.draws, self.losses))
        return f"{wins} wins, {draws} draws, {losses} losses"


def game_of(trained: TrainedAgent, what: str) -> Any:
    """The two-player Pgx game a trained run plays; `UsageError` (naming `what`) where it plays none."""
    config = trained.config
    if config.architecture != "anakin" or split_suite(config.env.name)[0] != "pgx":
        raise UsageError(
            f"{what} plays {config.env.name}; --opponent plays two-player Pgx games (pgx:tic_tac_toe, ...)"
        )
    env = trained.make_env()
    if env.num_players != 2:
        raise UsageError(f"{what} plays {config.env.name}, a game of {env.num_players} players; --opponent needs two")
    if trained.agent.recurrent:
        raise UsageError(f"{what}'s agent has memory (network.core={config.network.core}); matches play without it")
    return env


def agent_player(trained: TrainedAgent, env: Any, greedy: bool) -> Player:
    """A trained agent as a player: it sees `env`'s observation of the game (its own run's environment)."""
    act = trained.agent.greedy_act if greedy and trained.agent.greedy_act else trained.agent.act
    return Player(lambda params, game, keys: act(params, env.observe(game), keys)[0], trained.acting_params)


def _random_moves(params: None, game: Any, keys: chex.PRNGKey) -> chex.Array:
    logits = jnp.where(game.legal_action_mask, 0.0, -jnp.inf)
    return jax.vmap(jax.random.categorical)(keys, logits).astype(jnp.int32)


RANDOM_PLAYER = Player(_random_moves)
"""A uniformly random legal move of each game."""


def opponent(trained: TrainedAgent, env: Any, name: str, greedy: bool) -> Player:
    """The opponent `--opponent NAME` names: `random`, or the agent of the run in the workdir `name`, which must play
    `env`'s game with the same settings."""
    if name == RANDOM:
        return RANDOM_PLAYER
    try:
        other = load(name)
    except ConfigError:
        raise UsageError(
            f"--opponent {name!r} holds no checkpoint; give random or the --workdir of a train run"
        ) from None
    other_env = game_of(other, f"--opponent {name!r}")
    if (other_env.task, other_env.constructor_kwargs) != (env.task, env.constructor_kwargs):
        raise UsageError(f"--opponent {name!r} plays {other.config.env.name}, not {trained.config.env.name}")
    return agent_player(other, other_env, greedy)


def play(env: Any, player: Player, other: Player, episodes: int, seed: int, max_steps: int) -> Results:
    """`episodes` games of `env` between `player` (first in even games) and `other`, from `seed`."""
    games = jax.jit(_games, static_argnums=(0, 1, 2, 3, 4))
    outcome, first, ended = games(
        env, player.choose, other.choose, episodes, max_steps, player.params, other.params, jax.random.key(seed)
    )
    outcome, first, ended = (np.asarray(x) for x in (outcome, first, ended))
    counts = [np.bincount(1 - first[ended & test], minlength=2) for test in (outcome > 0, outcome == 0, outcome < 0)]
    return Results(*counts, unfinished=int(np.sum(~ended)))


def _games(
    env: Any, ours: Callable, theirs: Callable, episodes: int, max_steps: int, params: Any, other_params: Any, key
) -> tuple[chex.Array, chex.Array, chex.Array]:
    """`(outcome, moved_first, ended)` `[episodes]`: the sum of the rewards of the player choosing with `ours`,
    whether it moved first, and whether the game ended."""
    reset_key, play_key = jax.random.split(key)
    state, _ = jax.vmap(env.reset)(jax.random.split(reset_key, episodes))
    first = jnp.arange(episodes) % 2 == 0
    seat = jnp.where(first, env.current_player(state), 1 - env.current_player(state))

    def move(carry):
        state, outcome, ended, t = carry
        keys = jax.random.split(jax.random.fold_in(play_key, t), (2, episodes))
        mine, others = ours(params, state.game, keys[0]), theirs(other_params, state.game, keys[1])
        action = jnp.where(env.current_player(state) == seat, mine, others)
        state, timestep = jax.vmap(env.step)(state, action)
        reward = jnp.take_along_axis(env.rewards(state), seat[:, None], axis=1)[:, 0]
        return state, outcome + jnp.where(ended, 0.0, reward), ended | (timestep.step_type == LAST), t + 1

    def going_on(carry):
        return ~jnp.all(carry[2]) & (carry[3] < max_steps)

    ended = jnp.zeros(episodes, bool)
    _, outcome, ended, _ = jax.lax.while_loop(going_on, move, (state, jnp.zeros(episodes), ended, 0))
    return outcome, first, ended
