"""Pgx's games (Koyamada et al., 2023) for Anakin: `pgx:2048`, `pgx:tic_tac_toe`, `pgx:minatar-breakout`, ...

Every id in `pgx.available_envs()`. A game ends in a terminal state (discount
0): Pgx's long games end themselves, as AlphaZero's did (Go after 2 x size^2
moves, chess and shogi by their rules or a move cap), and no Pgx game sets
`truncated` itself; the adapter's own `step_limit` (off by default) truncates
(discount 1) where a time limit is wanted, e.g. for MinAtar. pgx's `step`
never resets, so the LAST timestep carries the final observation and podracer's
`AutoReset` starts the next game one step later.

Observations are a dict: `"observation"`, Pgx's own (bool or float planes, as
Pgx gives them), and `ACTION_MASK`, Pgx's `legal_action_mask` (bool `[A]`,
True = legal; all True on a terminal state, as Pgx sets it, so a policy there
never has every action masked). Pgx answers an illegal action by ending the
game with a penalty of -1 for the player who made it.

Rewards. The timestep's reward is the reward of the player who moved, Pgx's
`rewards[current_player]` of the state the move was made in: an agent playing
every seat gets the reward of the action it took. In a two-player game the
other player's outcome of that move (the loser's -1) is not in the timestep;
self-play (the agent playing both sides, whose value changes sign with the
player to move) reads it from `rewards(state)`, every player's reward of the
last move, and `current_player(state)`, the player to move; `pgx_env` gives
Pgx's game itself, for search with the game's own rules as the model.
Single-player games (2048, MinAtar) have one player, so the reward is simply
the game's. A single-agent learner (PPO) on a two-player game maximises the
winning moves of both sides together, so it learns to collude (on tic-tac-toe,
games where the first player wins in 5 moves): two-player games need self-play.

Self-play (`self_play=True`, for two-player games of perfect information
without chance). Search with the game's own rules as the model (AlphaZero)
needs the game's state where the agent acts, and an agent sees only the
observation: with `self_play` the observation also holds Pgx's state itself
under `GAME_STATE` (`podracer.envs.actions`), which no network reads (as the
mask, it is taken out before the torso). Its spec, a `pgx.State` of
`dm_env` specs, is known without stepping. A game of one or three players
(2048, MinAtar, sparrow mahjong) has no opponent to search against, and one
with hidden cards or dice (poker, backgammon) would let the search see the
opponent's cards or fix the dice, so those refuse it (`ConfigError` on
`env.kwargs.self_play`).

The player to move is not in the observation. Pgx's observations are already
the mover's own view (tic-tac-toe's first plane is the mover's marks; Go's
planes carry the mover's colour), while `current_player` is a seat number
that Pgx draws at random at the start of every game (it "does NOT represent
the turn"), so it tells a policy or value nothing about the position: an input
that is pure noise, which a network would have to learn to ignore.

The adapter's state keeps Pgx's state and a PRNG key, split on every step for
the stochastic games (2048's new tiles, backgammon's dice, MinAtar's sticky
actions); deterministic games ignore theirs. Keyword arguments: `step_limit`,
`self_play`, and the keyword arguments of the game's constructor (`pgx.make` takes none):
MinAtar's `sticky_action_prob` and `use_minimal_action_set`, Go's `komi`,
`history_length` and `max_terminal_steps` (with `size` matching the id: `go_9x9`
takes `size=9`). Pgx 2.6 builds Hex with any `size` but runs only its own 11:
`make` traces a reset, so such a setting fails there, as a `ValueError`.
"""

import dataclasses
import functools
import inspect
from typing import Any

import chex
import jax
import numpy as np
import pgx
from dm_env import specs
from flax import struct

from podracer.config.errors import ConfigError
from podracer.config.field_checks import is_whole_number
from podracer.envs import timestep as ts
from podracer.envs.actions import ACTION_MASK, GAME_STATE, OBSERVATION
from podracer.envs.base import Environment
from podracer.envs.suites.adapting import Settings, check_settings

NOT_FOR_SELF_PLAY = {  # Two-player games whose true state a search must not see or cannot plan with.
    "backgammon": "its dice are drawn inside `step`, which a search tree would take as fixed",
    "kuhn_poker": "its state holds the opponent's hidden card",
    "leduc_holdem": "its state holds the opponent's hidden card",
}


@struct.dataclass
class PgxState:
    game: pgx.State  # Pgx's own state: current player, every player's rewards, terminated, ...
    key: chex.PRNGKey  # Split on every step for the stochastic games.


@dataclasses.dataclass(frozen=True)
class PgxEnvironment(Environment):
    """Pgx's game `task` with dm_env semantics, from the mover's side; build it with `make`."""

    task: str
    step_limit: int | None = None  # Truncates (discount 1) after this many moves; None: the game's own end only.
    constructor_kwargs: Settings = ()
    self_play: bool = False  # The observation also holds Pgx's state, under GAME_STATE (module docstring).

    def __post_init__(self):
        if self.step_limit is not None and not is_whole_number(self.step_limit, 1):
            raise ValueError(
                f"pgx {self.task}: step_limit must be None or a whole number >= 1, got {self.step_limit!r}."
            )

    @property
    def pgx_env(self) -> pgx.Env:
        """Pgx's game object (shared by equal adapters): its `step` is the rules, for search."""
        return _pgx_env(self.task, self.constructor_kwargs)

    @property
    def num_players(self) -> int:
        return self.pgx_env.num_players

    def reset(self, key: chex.PRNGKey) -> tuple[PgxState, ts.TimeStep]:
        key, init_key = jax.random.split(key)
        game = self.pgx_env.init(init_key)
        return PgxState(game, key), ts.restart(self.observe(game))

    def step(self, state: PgxState, action: chex.Array) -> tuple[PgxState, ts.TimeStep]:
        key, step_key = jax.random.split(state.key)
        mover = state.game.current_player
        game = self.pgx_env.step(state.game, action, step_key)
        truncated = game.truncated
        if self.step_limit is not None:
            truncated = truncated | (game._step_count >= self.step_limit)
        timestep = ts.transition(self.observe(game), game.rewards[mover], game.terminated, truncated)
        return PgxState(game, key), timestep

    @staticmethod
    def current_player(state: PgxState) -> chex.Array:
        """The player to move (int32): Pgx's seat number, drawn at random for each game."""
        return state.game.current_player

    @staticmethod
    def rewards(state: PgxState) -> chex.Array:
        """Every player's reward for the last move, float32 `[num_players]` (zeros after a reset)."""
        return state.game.rewards

    def observe(self, game: pgx.State) -> dict[str, Any]:
        """The observation of Pgx's state `game`: its planes and legal actions, and with `self_play` `game` itself."""
        observation = {ACTION_MASK: game.legal_action_mask, OBSERVATION: game.observation}
        return {**observation, GAME_STATE: game} if self.self_play else observation

    @functools.cached_property
    def _observation_shapes(self) -> dict[str, Any]:
        return jax.eval_shape(self.reset, jax.random.key(0))[1].observation

    def observation_spec(self) -> dict[str, Any]:
        """A spec per entry; with `self_play`, `GAME_STATE`'s is Pgx's state with a spec at every leaf."""
        return {
            name: jax.tree.map(lambda x, name=name: specs.Array(x.shape, x.dtype, name=name), shapes)
            for name, shapes in self._observation_shapes.items()
        }

    def action_spec(self) -> specs.DiscreteArray:
        return specs.DiscreteArray(self._observation_shapes[ACTION_MASK].shape[0], np.int32, name="action")


def is_task(task: str) -> bool:
    """Whether `task` is one of Pgx's game ids (a game needing a package that is missing says so in `make`)."""
    return task in pgx.available_envs()


def task_names() -> list[str]:
    return list(pgx.available_envs())


def make(task: str, step_limit: int | None = None, self_play: bool = False, **kwargs: Any) -> PgxEnvironment:
    """The adapter of Pgx's `task`; `kwargs` go to the game's constructor (see the module's docstring).

    Builds the game now, so an unknown or ill-typed keyword raises `ValueError` naming the accepted ones,
    and `self_play` on a game it does not suit raises `ConfigError` on `env.kwargs.self_play`.
    """
    constructor = _constructor_defaults(task)
    accepted = "it takes step_limit, self_play" + (
        f" and its constructor's {sorted(constructor)}" if constructor else " (pgx.make takes no others)"
    )
    settings = check_settings(  # self_play is a setting too, a bool, though the adapter's and not the game's.
        "pgx", task, {**kwargs, "self_play": self_play}, {**constructor, "self_play": False}, accepted=accepted
    )
    constructor_kwargs = tuple((name, value) for name, value in settings if name != "self_play")
    env = PgxEnvironment(task, step_limit, constructor_kwargs, self_play)
    if self_play:
        _check_self_play(task, env.num_players)
    try:
        env.pgx_env  # noqa: B018 (builds the game: its constructor checks some of its arguments)
        env.observation_spec()  # Traces a reset: settings Pgx builds but cannot run with fail here.
    except (AssertionError, TypeError) as error:
        raise ValueError(f"pgx {task} does not run with {kwargs}: {str(error).splitlines()[0]}") from None
    return env


def _check_self_play(task: str, num_players: int) -> None:
    """Raises `ConfigError` on `env.kwargs.self_play` where `task` is not a two-player game a search may play."""
    if num_players != 2 or task in NOT_FOR_SELF_PLAY:
        reason = NOT_FOR_SELF_PLAY.get(task, f"it is a game of {num_players} player{'s' * (num_players > 1)}")
        raise ConfigError(
            "env.kwargs.self_play",
            f"self-play searches two-player games of perfect information without chance, and pgx:{task} is not one: "
            + reason,
            "choose a two-player game such as pgx:tic_tac_toe, pgx:connect_four, pgx:othello or pgx:go_9x9, or "
            "leave self_play out and train a single-agent learner (ppo, dqn)",
        )


def _constructor_defaults(task: str) -> dict[str, Any]:
    """The keyword arguments of the game class `pgx.make(task)` builds, with their defaults."""
    parameters = inspect.signature(type(_pgx_env(task, ()))).parameters.values()
    return {p.name: p.default for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


@functools.lru_cache(maxsize=64)
def _pgx_env(task: str, constructor_kwargs: Settings) -> pgx.Env:
    """Pgx's game, built once per task and constructor arguments: `pgx.make`'s, rebuilt with the arguments."""
    try:
        env = pgx.make(task)
    except ImportError as error:
        raise ConfigError(
            "env.name",
            f"pgx's {task} needs the package {error.name!r}, which is not installed ({error})",
            f"install it (pip install {error.name}), or choose another pgx game",
        ) from None
    if not constructor_kwargs:
        return env
    rebuilt = type(env)(**dict(constructor_kwargs))
    if rebuilt.id != task:
        raise ValueError(
            f"pgx {task} with {dict(constructor_kwargs)} would be pgx's {rebuilt.id}: pgx.make builds {task} with "
            "constructor arguments of its own (Go's size), pass those too"
        )
    return rebuilt
