"""The Pgx adapter: Pgx's own moves, the mover's reward, game ends, the legal-action mask, specs, settings."""

import dataclasses
import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest
from dm_env import specs

from podracer import envs
from podracer.config.errors import ConfigError
from podracer.envs import FIRST, LAST, MID, AutoReset
from podracer.envs.actions import ACTION_MASK
from podracer.envs.suites import pgx_env

KEY = jax.random.key(0)
TASKS = list(pgx.available_envs())
SLOW = {"animal_shogi", "chess", "gardner_chess", "shogi"}  # Building and tracing each takes 3 to 15 s.


def random_legal_action(key: jax.Array, mask: jax.Array) -> jax.Array:
    """A uniformly random legal action (int32) of a bool mask `[A]`: the random legal policy."""
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


@functools.partial(jax.jit, static_argnums=0)
def _adapter_rollout(env, key, action_keys):
    """The adapter's timesteps under the random legal policy (one action key per step), and its players' rewards."""

    def step(carry, action_key):
        state, timestep = carry
        action = random_legal_action(action_key, timestep.observation[ACTION_MASK])
        state, timestep = env.step(state, action)
        return (state, timestep), (timestep, env.rewards(state), env.current_player(state))

    return jax.lax.scan(step, env.reset(key), action_keys)[1]


@functools.partial(jax.jit, static_argnums=0)
def _pgx_rollout(task, key, action_keys):
    """Pgx's own game from `key`, split as the adapter documents (init, then one key per move), same policy.

    Returns, per move: the mover and Pgx's state after the move.
    """
    game = pgx.make(task)
    key, init_key = jax.random.split(key)

    def step(carry, action_key):
        state, key = carry
        key, step_key = jax.random.split(key)
        action = random_legal_action(action_key, state.legal_action_mask)
        after = game.step(state, action, step_key)
        return (after, key), (state.current_player, after)

    return jax.lax.scan(step, (game.init(init_key), key), action_keys)[1]


@pytest.mark.parametrize(
    "task, moves",
    [("tic_tac_toe", 12), pytest.param("2048", 150, marks=pytest.mark.slow)],  # 2048: new tiles at random; 8 s.
)
def test_moves_are_pgx_step(task, moves):
    """Observations, masks, the mover's rewards and the game's end equal Pgx's own step, move by move."""
    action_keys = jax.random.split(jax.random.key(1), moves)
    timesteps, rewards, players = _adapter_rollout(pgx_env.make(task), KEY, action_keys)
    movers, reference = _pgx_rollout(task, KEY, action_keys)
    end = int(np.argmax(reference.terminated))
    assert reference.terminated[end] and end > 0, "the game should end within the moves"
    played = slice(0, end + 1)
    np.testing.assert_array_equal(timesteps.observation["observation"][played], reference.observation[played])
    np.testing.assert_array_equal(timesteps.observation[ACTION_MASK][played], reference.legal_action_mask[played])
    mover_rewards = np.take_along_axis(np.asarray(reference.rewards), np.asarray(movers)[:, None], axis=1)[:, 0]
    np.testing.assert_array_equal(timesteps.reward[played], mover_rewards[played])
    np.testing.assert_array_equal(rewards[played], reference.rewards[played])
    np.testing.assert_array_equal(players[played], reference.current_player[played])
    np.testing.assert_array_equal(timesteps.step_type[played], [MID] * end + [LAST])
    np.testing.assert_array_equal(timesteps.discount[played], [1.0] * end + [0.0])


def _play(env, key, actions):
    """The adapter's states and timesteps over fixed `actions`, after a reset with `key`."""
    step = jax.jit(env.step)
    state, timestep = env.reset(key)
    states, timesteps = [state], [timestep]
    for action in actions:
        state, timestep = step(state, jnp.int32(action))
        states.append(state)
        timesteps.append(timestep)
    return states, timesteps


@pytest.mark.parametrize("seed", range(4))  # Pgx draws who moves first: both seats win in some of these games.
def test_the_winning_move_rewards_the_player_who_made_it(seed):
    env = pgx_env.make("tic_tac_toe")
    states, timesteps = _play(env, jax.random.key(seed), [0, 3, 1, 4, 2])  # The first player completes the top row.
    winner = int(env.current_player(states[0]))
    loser = 1 - winner
    assert int(env.current_player(states[-2])) == winner
    assert float(timesteps[-1].reward) == 1.0 and int(timesteps[-1].step_type) == LAST
    assert float(timesteps[-1].discount) == 0.0
    np.testing.assert_array_equal(np.asarray(env.rewards(states[-1]))[[winner, loser]], [1.0, -1.0])
    assert all(float(t.reward) == 0.0 and int(t.step_type) == MID for t in timesteps[1:-1])
    final_board = np.asarray(timesteps[-1].observation["observation"])  # The loser's view: the winner's marks second.
    np.testing.assert_array_equal(final_board[..., 1].ravel()[:3], [True] * 3)


def test_the_seats_are_drawn_at_random_and_not_observed():
    env = pgx_env.make("tic_tac_toe")
    starts = [env.reset(jax.random.key(seed)) for seed in range(8)]
    assert {int(env.current_player(state)) for state, _ in starts} == {0, 1}
    for _, first in starts:
        np.testing.assert_array_equal(first.observation["observation"], starts[0][1].observation["observation"])


def test_an_illegal_move_ends_the_game_with_a_penalty_for_its_player():
    env = pgx_env.make("tic_tac_toe")
    states, timesteps = _play(env, KEY, [4, 4])  # The centre, twice.
    assert not bool(timesteps[1].observation[ACTION_MASK][4])
    assert float(timesteps[2].reward) == -1.0 and float(timesteps[2].discount) == 0.0
    assert int(timesteps[2].step_type) == LAST
    np.testing.assert_array_equal(timesteps[2].observation[ACTION_MASK], True)  # Pgx's terminal mask: all legal.


def test_the_action_mask_is_the_empty_cells():
    env = pgx_env.make("tic_tac_toe")
    _, timesteps = _play(env, KEY, [4, 0, 8])
    for timestep in timesteps:
        board = np.asarray(timestep.observation["observation"])
        np.testing.assert_array_equal(timestep.observation[ACTION_MASK], ~(board[..., 0] | board[..., 1]).ravel())
    assert int(np.sum(timesteps[-1].observation[ACTION_MASK])) == 6


def test_step_limit_truncates_with_discount_one_then_autoreset_restarts():
    env = pgx_env.make("tic_tac_toe", step_limit=3)  # No game of tic-tac-toe ends in 3 moves.
    timesteps, _, _ = _adapter_rollout(env, KEY, jax.random.split(jax.random.key(1), 3))
    np.testing.assert_array_equal(timesteps.step_type, [MID, MID, LAST])
    np.testing.assert_array_equal(timesteps.discount, 1.0)
    looping = AutoReset(env)

    @jax.jit
    def run(key):
        state, _ = looping.reset(key)
        return jax.lax.scan(looping.step, state, jnp.arange(5))[1]

    np.testing.assert_array_equal(run(KEY).step_type, [MID, MID, LAST, FIRST, MID])


def test_specs_can_be_read_inside_a_jitted_function():
    env = pgx_env.make("tic_tac_toe")
    jax.jit(lambda: jnp.zeros(env.observation_spec()["observation"].shape))()


def test_settings_are_step_limit_and_the_game_constructors_arguments():
    assert pgx_env.make("minatar-breakout", sticky_action_prob=0.0).pgx_env.sticky_action_prob == 0.0
    assert pgx_env.make("go_9x9", size=9, komi=6.5).pgx_env.id == "go_9x9"
    with pytest.raises(
        ValueError, match=r"no setting max_steps: it takes step_limit, self_play \(pgx.make takes no others\)"
    ):
        pgx_env.make("tic_tac_toe", max_steps=10)
    with pytest.raises(ValueError, match=r"its constructor's \['sticky_action_prob', 'use_minimal_action_set'\]"):
        pgx_env.make("minatar-breakout", sticky=0.0)
    with pytest.raises(ValueError, match="sticky_action_prob must be a number, got 'no'"):
        pgx_env.make("minatar-breakout", sticky_action_prob="no")
    with pytest.raises(ValueError, match="step_limit must be None or a whole number >= 1, got 0"):
        pgx_env.make("2048", step_limit=0)
    with pytest.raises(ValueError, match="would be pgx's go_19x19: .*Go's size"):
        pgx_env.make("go_9x9", komi=6.5)
    with pytest.raises(ValueError, match=r"pgx hex does not run with \{'size': 5\}: cannot reshape"):
        pgx_env.make("hex", size=5)  # Pgx builds it but runs only size 11.


def test_the_registry_builds_it_and_rejects_bad_settings_on_env_kwargs():
    assert envs.make("pgx:2048", step_limit=5) == pgx_env.make("2048", step_limit=5)
    with pytest.raises(ConfigError, match="pgx has no environment 'tictactoe'; did you mean pgx:tic_tac_toe"):
        envs.make("pgx:tictactoe")


def test_tasks_are_pgx_available_envs():
    assert pgx_env.task_names() == TASKS
    assert all(pgx_env.is_task(task) for task in TASKS)
    assert not pgx_env.is_task("bridge_bidding") and not pgx_env.is_task("Go")  # Pgx's make refuses bridge.


def test_a_game_whose_package_is_missing_says_which(monkeypatch):
    monkeypatch.setitem(sys.modules, "pgx.minatar.breakout", None)  # Its import now fails as if it were missing.
    pgx_env._pgx_env.cache_clear()
    try:
        with pytest.raises(ConfigError, match="pgx's minatar-breakout needs the package 'pgx.minatar.breakout'"):
            pgx_env.make("minatar-breakout")
    finally:
        pgx_env._pgx_env.cache_clear()


def test_adapters_are_hashable_values():
    a, b = (pgx_env.make("minatar-breakout", sticky_action_prob=0.0) for _ in range(2))
    assert a == b and hash(a) == hash(b) and a != pgx_env.make("minatar-breakout")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.task = "othello"


@pytest.mark.slow  # Traces 16 games: about 40 s.
@pytest.mark.parametrize("task", [t for t in TASKS if t not in SLOW])  # The slow ones cost 25 s of the test budget.
def test_every_game_has_specs_before_stepping_that_its_moves_meet(task):
    """Specs equal Pgx's own first state's; a move keeps the state's types (a `lax.scan` carry) and the specs.

    Traced with `jax.eval_shape`, not run: the specs have no bounds, so shapes and dtypes are all they say.
    """
    env = pgx_env.make(task)
    spec = env.observation_spec()  # Read before any reset or step.
    first_state = jax.eval_shape(pgx.make(task).init, KEY)
    assert spec == {
        ACTION_MASK: specs.Array(first_state.legal_action_mask.shape, np.bool_, name=ACTION_MASK),
        "observation": specs.Array(first_state.observation.shape, first_state.observation.dtype, name="observation"),
    }
    assert env.action_spec() == specs.DiscreteArray(first_state.legal_action_mask.shape[0], np.int32, name="action")
    state, first = jax.eval_shape(env.reset, KEY)
    stepped, timestep = jax.eval_shape(env.step, state, jnp.zeros((), jnp.int32))
    assert jax.tree.structure(stepped) == jax.tree.structure(state)
    for before, after in zip(jax.tree.leaves(state), jax.tree.leaves(stepped), strict=True):
        assert (before.shape, before.dtype) == (after.shape, after.dtype)
    for observation in (first.observation, timestep.observation):
        assert {name: (x.shape, x.dtype) for name, x in observation.items()} == {
            name: (s.shape, s.dtype) for name, s in spec.items()
        }
    assert (timestep.reward.shape, timestep.reward.dtype) == ((), jnp.float32)
    assert env.rewards(stepped).shape == (env.num_players,) and env.current_player(stepped).shape == ()
