"""A non-finite loss, gradient or parameter stops either architecture at that update, before it is checkpointed.

NaNs are injected by wrapping a built-in agent: the wrapper counts its updates
and poisons the loss or one parameter at a chosen one.
"""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import podracer
from podracer import agents
from podracer.run import finite
from podracer.run.checkpoints import Checkpointer
from tests.helpers import load_config, run_cli, small_sebulba_cartpole


def test_check_names_the_first_bad_update_its_metrics_and_leaves():
    metrics = {"loss": np.array([0.5, 0.4, np.inf]), "entropy": np.array([1.0, np.nan, np.nan])}
    flags = {".params['w']": np.bool_(False), ".params['b']": np.bool_(True)}
    message = (
        r"^update 11 produced non-finite values: entropy=nan; learner state at \.params\['w'\] \(after update 12\)\. "
    )
    with pytest.raises(finite.NonFiniteError, match=message):
        finite.check(10, metrics, flags)
    with pytest.raises(finite.NonFiniteError, match=r"^updates 10-11 produced .*: learner state at \.params\['w'\]"):
        finite.check(10, {"loss": metrics["loss"][:2]}, flags)  # Metrics fine, the state not.
    finite.check(1, {"loss": metrics["loss"][:2]}, {".params['w']": np.bool_(True)})  # All finite: no error.


def test_leaf_flags_cover_floating_leaves_only():
    state = {"w": jnp.array([1.0, jnp.nan]), "b": jnp.zeros(3), "count": jnp.int32(7)}
    assert {path: bool(flag) for path, flag in finite.leaf_flags(state).items()} == {"['b']": True, "['w']": False}


def poisoned(agent: podracer.Agent, at_update: int, target: str) -> podracer.Agent:
    """`agent`, with a NaN added at its `at_update`-th `learn` to the loss metric or to its first parameter."""

    def init(key, observation_spec, action_spec):
        return agent.init(key, observation_spec, action_spec), jnp.int32(0)

    def learn(state, trajectory, key, axis_name=None):
        inner, count = state
        inner, metrics = agent.learn(inner, trajectory, key, axis_name)
        count = count + 1
        poison = jnp.where(count == at_update, jnp.nan, 0.0)
        if target == "loss":
            metrics = {**metrics, "loss": metrics["loss"] + poison}
        else:
            params, treedef = jax.tree.flatten(inner.params)
            inner = inner.replace(params=jax.tree.unflatten(treedef, [params[0] + poison, *params[1:]]))
        return (inner, count), metrics

    return podracer.Agent(init, agent.act, learn, lambda state: agent.acting_params(state[0]))


@pytest.mark.slow  # Two runs, about 10 s.
def test_anakin_stops_at_the_poisoned_update_and_keeps_the_last_good_checkpoint(tmp_path):
    """A parameter poisoned at update 5 shows in the state after it and in update 6's loss: both are named.

    (A poisoned loss alone, with the state finite, takes the same check: see
    test_check_names_the_first_bad_update_its_metrics_and_leaves, and the
    command line's diverging run below.)
    """
    fields = {"num_envs": 16, "updates_per_dispatch": 2, "total_steps": 16 * 16 * 2 * 6}
    config = load_config("anakin_catch", {**fields, "checkpoint.every_updates": 2})
    target = "parameter"
    agent = poisoned(agents.make(config, num_updates=12), at_update=5, target=target)
    with pytest.raises(finite.NonFiniteError, match="update 6 produced .*loss=nan.*learner state"):
        podracer.train(config, agent=agent, workdir=str(tmp_path))
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["2", "4"]
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] // (16 * 16) for r in records] == [2, 4, 6]  # The bad dispatch's record is written, for reading.
    healthy = poisoned(agents.make(config, num_updates=12), at_update=-1, target=target)
    resumed = podracer.train(config, agent=healthy, workdir=str(tmp_path))  # From update 4, the last good one.
    assert [r["step"] // (16 * 16) for r in resumed.history] == [2, 4, 6, 8, 10, 12]
    assert all(np.isfinite(leaf).all() for leaf in jax.tree.leaves(resumed.learner_state))


@pytest.mark.slow  # A Sebulba run with its threads.
def test_sebulba_stops_at_the_poisoned_update_with_the_error_itself(tmp_path):
    config = small_sebulba_cartpole(**{"total_steps": 8 * 6 * 2 * 6, "checkpoint.every_updates": 2})
    agent = poisoned(agents.make(config, num_updates=6), at_update=4, target="parameter")
    with pytest.raises(finite.NonFiniteError, match=r"update 4 produced non-finite values: learner state at \[0\]"):
        podracer.train(config, agent=agent, workdir=str(tmp_path))
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["2"]
    checkpointer = Checkpointer(str(tmp_path), config)
    assert checkpointer.newest["update"] == 2
    checkpointer.close()


@pytest.mark.slow  # A training run in a fresh process, about 6 s.
def test_the_command_line_exits_1_naming_the_update():
    result = run_cli(
        "train",
        "--config",
        "configs/anakin_catch.py",
        "--config.optimizer.learning_rate=1e30",
        "--config.total_steps=81920",  # 10 whole updates of 512 x 16 steps, so no line about rounding.
        "--noprogress",
    )
    assert result.returncode == 1, result.stderr
    devices, line = result.stderr.strip().splitlines()  # The run's first line, then the error in one line.
    assert devices.startswith("podracer: replicating over ")
    assert line.startswith("podracer train: error: update ") and "produced non-finite values" in line
