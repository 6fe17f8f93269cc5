"""Matches in a two-player game (`podracer.experiment.match`, `podracer evaluate --opponent`): seats alternate, the
outcome is the first player's side, and a bad opponent or a run of another kind of game exits 2."""

import jax.numpy as jnp
import numpy as np
import pytest

from podracer import cli, envs
from podracer.experiment import match

LOWEST_LEGAL = match.Player(lambda params, game, keys: jnp.argmax(game.legal_action_mask, axis=-1).astype(jnp.int32))
"""Always the lowest legal cell: the player moving first takes 0, 2, 4, 6 and wins on the diagonal."""


def test_seats_alternate_and_each_game_counts_for_the_side_that_won_it():
    env = envs.make("pgx:tic_tac_toe", self_play=True)
    results = match.play(env, LOWEST_LEGAL, LOWEST_LEGAL, 10, seed=0, max_steps=20)
    np.testing.assert_array_equal(results.wins, [5, 0])  # Moving first (games 0, 2, ...) it wins ...
    np.testing.assert_array_equal(results.losses, [0, 5])  # ... and second, it loses to the same play.
    assert results.draws.sum() == 0 and results.unfinished == 0
    assert results.line() == "5 wins, 0 draws, 5 losses" and results.line(1) == "0 wins, 0 draws, 5 losses"
    cut = match.play(env, LOWEST_LEGAL, match.RANDOM_PLAYER, 4, seed=0, max_steps=3)  # No game ends in 3 moves.
    assert cut.unfinished == 4 and cut.wins.sum() + cut.draws.sum() + cut.losses.sum() == 0


def test_a_bad_opponent_exits_2_before_anything_is_loaded(tmp_path, capsys):
    assert cli.run(["evaluate", str(tmp_path), "--opponent", str(tmp_path / "nowhere")]) == 2
    assert "--opponent" in (err := capsys.readouterr().err) and "neither random nor a folder" in err
    assert cli.run(["evaluate", str(tmp_path), "--opponent", "random", "--video", str(tmp_path / "a.mp4")]) == 2
    assert "not a match" in capsys.readouterr().err


@pytest.mark.slow  # Uses the trained run (conftest.catch_run).
def test_a_run_of_a_one_player_game_cannot_play_a_match(catch_run, capsys):
    workdir, _ = catch_run
    assert cli.run(["evaluate", workdir, "--opponent", "random"]) == 2
    assert "plays catch; --opponent plays two-player Pgx games" in capsys.readouterr().err
    assert cli.run(["evaluate", workdir, "--opponent", workdir]) == 2  # The run itself is refused first.
