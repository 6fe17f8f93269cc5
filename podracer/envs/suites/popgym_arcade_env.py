"""POPGym Arcade (Wang et al., 2025) for Anakin: `popgym_arcade:CountRecallEasy`, `popgym_arcade:BreakoutHard`, ...

The tasks are POPGym Arcade's ids (`popgym_arcade.registration.REGISTERED_ENVIRONMENTS`:
CartPole, NoisyCartPole, CountRecall, BattleShip, AutoEncode, Navigator,
MineSweeper, Skittles, Breakout and Tetris, each Easy, Medium or Hard). Their
environments subclass gymnax's, so they go through `gymnax_api`'s adapter:
`reset_env` and `step_env`, never the auto-resetting `step`. Observations are
the games' channels-last RGB images, obs_size x obs_size x 3, as the games
make them: uint8, except Breakout's float32 (0 to 255). Several games'
observation spaces declare another size than their images have
(CountRecall's 256x256, MineSweeper's 4x4); the spec describes what they
return.

Termination and time limit. Every game has a time limit of its own (an
attribute or, in Breakout and Tetris, `params.max_steps_in_episode`) and
returns one `done` for it and the game's own end. Most games also report
`info["terminated"]`, consistent with `done`; where that flag is not, the
natural end is read as `done` reads it:

- CartPole and NoisyCartPole: `done` is `is_terminal` of the state *before*
  the step (a fallen pole ends the episode one step later, with reward 0, the
  time limit after max_steps_in_episode + 1 steps): the natural end is that
  `is_terminal` with the state's time set back to 0;
- AutoEncode: `done` is also read before the step's update: the end is
  `count >= the number of cards` on the state before the step;
- Breakout: its terminal flag is overwritten with `done`: the end is the ball
  on the bottom row (lost) or no bricks left, on the stepped state;
- Tetris: its terminal flag is overwritten with `done`: the end is 10 lines
  cleared, or the new piece colliding when it spawned at the start of the
  step (a step after a piece locked), recomputed with Tetris's own functions.

Truncation is the rest of `done`, so termination wins on the last allowed step.

gymnax 1.x. popgym-arcade 0.0.5 was written against gymnax 0.0.x, whose
`discount` read `is_terminal`; gymnax 1.x's reads `is_terminated`, which
CartPole, NoisyCartPole, Skittles, Breakout and Tetris do not define, so their
`step_env` (which puts a discount in its info) would raise. Their environment
objects get `is_terminated = is_terminal`, as gymnax 0.0.x had it; nothing
else changes (the adapter never reads that info's discount).

AutoEncode declares 4 actions (its `action_space`), while its fire action is
4: the spec keeps the declared space, so an agent choosing from it never
fires in the play stage (popgym-arcade's own baselines choose from the same
space); the adapter's `step` passes action 4 on like any other.

Keyword arguments name the game's constructor arguments that its difficulty
level leaves free (`partial_obs`, `obs_size` of 128 or 256, CartPole's
`n_sigma`, ...; not those the level sets, such as NoisyCartPole's `n_sigma` or
Breakout's `paddle_width`) or env params fields the game declares itself
(CartPole's physics, Breakout's and Tetris's `max_steps_in_episode`, Tetris's
`drop_interval`, ...; not gymnax's inherited `max_steps_in_episode`, which
the other games ignore).
"""

import ast
import functools
import inspect
import textwrap
from typing import Any, Self

import jax.numpy as jnp
import popgym_arcade
from gymnax.environments import environment
from popgym_arcade import registration
from popgym_arcade.environments import autoencode, breakout, cartpole, tetris

from podracer.envs.spaces import space_to_spec
from podracer.envs.suites.gymnax_api import GymnaxApiEnvironment, Settings

__all__ = ["PopgymArcadeEnvironment", "is_task", "make", "space_to_spec", "task_names"]

OBS_SIZES = (128, 256)  # The image sizes every game's renderer draws.


class PopgymArcadeEnvironment(GymnaxApiEnvironment):
    """The POPGym Arcade game `task` with dm_env semantics; build it with `make`."""

    suite = "popgym_arcade"
    time_limit_fields = ("max_steps_in_episode",)

    @classmethod
    def build(cls, task: str, constructor_kwargs: Settings) -> Any:
        return _popgym_env(task, constructor_kwargs)

    @classmethod
    def constructor_arguments(cls, task: str) -> dict[str, Any]:
        return _free_arguments(getattr(registration, task))

    @classmethod
    def params_fields(cls, default_params: Any) -> list[str]:
        """The fields the game's own EnvParams class declares (not gymnax's placeholder `max_steps_in_episode`)."""
        return list(vars(type(default_params)).get("__annotations__", {}))

    @classmethod
    def make(cls, task: str, **kwargs: Any) -> Self:
        """`GymnaxApiEnvironment.make`, checking `obs_size` first: most games only fail on another when they render."""
        size = kwargs.get("obs_size", OBS_SIZES[0])
        if isinstance(size, bool) or size not in OBS_SIZES:
            raise ValueError(f"popgym_arcade {task}'s obs_size must be one of {list(OBS_SIZES)}, got {size!r}.")
        return super().make(task, **kwargs)

    def episode_end(self, before: Any, after: Any, done: Any, info: Any) -> tuple[Any, Any]:
        """The game's natural end, as its `done` reads it, is termination; the rest of `done` is truncation."""
        terminated = done & _natural_end(self.suite_env, self.params, before, after, info)
        return terminated, done & ~terminated


def is_task(task: str) -> bool:
    return task in registration.REGISTERED_ENVIRONMENTS


def task_names() -> list[str]:
    return list(registration.REGISTERED_ENVIRONMENTS)


def make(task: str, **kwargs: Any) -> PopgymArcadeEnvironment:
    """The adapter of POPGym Arcade's `task`; `kwargs` set free constructor arguments or env params fields.

    Raises `ValueError` naming the accepted names for any other keyword.
    """
    return PopgymArcadeEnvironment.make(task, **kwargs)


def _natural_end(env: Any, params: Any, before: Any, after: Any, info: Any) -> Any:
    """Whether the game ended by its own rules (not its time limit) on the step from `before` to `after`."""
    if isinstance(env, cartpole.CartPole):
        return env.is_terminal(before.replace(time=jnp.zeros_like(before.time)), params)
    if isinstance(env, autoencode.AutoEncode):
        return before.count >= env.decksize * env.num_decks
    if isinstance(env, breakout.Breakout):
        return (after.ball_y == after.brick_map.shape[0] - 1) | (jnp.count_nonzero(after.brick_map) == 0)
    if isinstance(env, tetris.Tetris):
        board, _ = tetris.clear_lines(before.board)
        spawned = tetris.TETROMINOES[before.next_pieces[0], 0]
        collided = before.just_locked & tetris.check_collision(board, spawned, 3, 0)  # spawn_new_piece's place.
        return (after.lines_cleared >= 10) | collided
    return jnp.asarray(info["terminated"], bool)


def _free_arguments(game: type) -> dict[str, Any]:
    """name -> default of the constructor arguments a game's class leaves free.

    A difficulty level (`CountRecallEasy`) passes `**kwargs` on to its game's
    class (`CountRecall`) with some arguments set (`num_decks=1`): those are
    not free. Read from the classes' signatures and their `super().__init__`
    calls, along the method resolution order.
    """
    free, fixed = {}, set()
    for klass in game.__mro__:
        if "__init__" not in vars(klass):
            continue
        parameters = list(inspect.signature(klass.__init__).parameters.values())[1:]  # Past `self`.
        for p in parameters:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in fixed:
                free.setdefault(p.name, p.default)
        if not any(p.kind == p.VAR_KEYWORD for p in parameters):
            break
        fixed |= _keywords_passed_on(klass.__init__)
    return free


def _keywords_passed_on(init: Any) -> set[str]:
    """The keyword arguments an `__init__` passes to another class's `__init__` (its `super().__init__(...)`)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)]
    return {keyword.arg for call in calls if call.func.attr == "__init__" for keyword in call.keywords if keyword.arg}


@functools.lru_cache(maxsize=64)
def _popgym_env(task: str, constructor_kwargs: Settings) -> Any:
    """POPGym Arcade's environment object, built once per task and constructor arguments."""
    env, _ = popgym_arcade.make(task, **dict(constructor_kwargs))
    if type(env).is_terminated is environment.Environment.is_terminated:
        env.is_terminated = env.is_terminal  # gymnax < 1.0's `discount`, which the games' `step_env` call, read it.
    return env
