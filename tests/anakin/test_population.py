"""Populations on Anakin: each member is its config run alone, bitwise; its metrics are logged and summarised."""

import math

import jax
import numpy as np
import pytest

import podracer
from podracer.anakin.program import members_vmapped, over_members
from podracer.config import population
from podracer.config.errors import ConfigError
from podracer.plot import read_metrics
from tests.helpers import load_config

TIMING = ("wall_seconds", "steps_per_second", "compile_seconds")


@pytest.mark.parametrize("members,in_parallel", [(3, 0), (3, 1), (3, 2), (3, 3), (3, 5), (1, 1), (4, 2)])
def test_members_vmapped_says_when_over_members_runs_a_cond_as_a_select(members, in_parallel):
    """The rule `anakin_settings.reset_fraction` reads, checked against what `over_members` traces: a member's
    `lax.cond` stays a cond one member at a time and becomes a select of both branches under vmap."""

    def member(x):
        return jax.lax.cond(x > 0, lambda: x + 1.0, lambda: x - 1.0)

    jaxpr = str(jax.make_jaxpr(over_members(member, members, in_parallel))(np.zeros(members, np.float32)))
    assert ("cond[" not in jaxpr) == members_vmapped(members, in_parallel), jaxpr


CATCH = {"num_envs": 16, "unroll_length": 8, "updates_per_dispatch": 2, "total_steps": 16 * 8 * 2 * 3}
# Clipping at 0.01 makes every update's step depend on the gradient's norm, a reduction. Every Catch population
# below is made of these members (the first 2 or all 3), so each member's own program is compiled once in the file.
CATCH_CLIPPED = {**CATCH, "optimizer.max_grad_norm": 0.01}
CATCH_MEMBERS = {
    "seed": (3, 5, 7),
    "optimizer.learning_rate": (3e-3, 1e-3, 2e-3),
    "agent.entropy_cost": (0.01, 0.03, 0.02),
}


def first_members(members: int) -> dict:
    return {field: values[:members] for field, values in CATCH_MEMBERS.items()}


def population_config(name, fields, varied, **more):
    return load_config(name, {**fields, **more, **{f"population.{field}": values for field, values in varied.items()}})


@pytest.fixture(scope="module")
def catch_alone():
    """`catch_alone(index)`: Catch member `index` (of `CATCH_MEMBERS`, clipped) run alone, once for the file.

    A member's own config is the same whichever population it came from (no population, its values set), so
    every test below compares against one run per member instead of running it again.
    """
    runs = {}

    def get(index: int) -> podracer.TrainResult:
        if index not in runs:
            runs[index] = podracer.train(
                population.member(population_config("anakin_catch", CATCH_CLIPPED, CATCH_MEMBERS), index)
            )
        return runs[index]

    return get


def member_state(result, index):
    return jax.tree.map(lambda x: np.asarray(x[index]), result.learner_state)


def assert_members_logged_and_summarised(result, workdir, members):
    """Each record holds every member's, with its index, and summarises them; metrics.jsonl reads back the same."""
    for record in result.history:
        each = record["members"]
        assert [member["member"] for member in each] == list(range(members))
        assert all(member["step"] == record["step"] for member in each)
        returns = np.array([member["mean_episode_return"] for member in each])
        assert record["best_return"] == returns.max() and record["best_member"] == int(np.argmax(returns))
        assert record["median_return"] == pytest.approx(np.median(returns))
        assert record["return_spread"] == pytest.approx(np.percentile(returns, 75) - np.percentile(returns, 25))
        episodes = sum(member["episodes"] for member in each)
        assert record["episodes"] == episodes
        pooled = sum(member["mean_episode_return"] * member["episodes"] for member in each) / episodes
        assert record["mean_episode_return"] == pytest.approx(pooled)
    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == len(result.history) * (members + 1)  # Each member's line, then the population's.
    assert read_metrics(str(workdir)) == result.history


@pytest.mark.slow  # 20-30 s each: a population and each member's own run.
@pytest.mark.default_compile(llvm_optimised=False)  # Bitwise only as XLA's own emitters build the two programs.
@pytest.mark.parametrize(
    ("name", "fields", "varied"),
    [
        # The actor-critic's population: DQN's below holds all it checks and replay besides.
        pytest.param("anakin_catch", CATCH_CLIPPED, first_members(2), marks=pytest.mark.extended),
        (  # Replay buffers (one per device), a target network and epsilon: learning starts mid-run.
            "anakin_cartpole_dqn",
            {"updates_per_dispatch": 20, "total_steps": 8 * 2 * 20 * 3, "agent.min_replay_size": 400},
            {
                "seed": (3, 5),
                "agent.gamma": (0.99, 0.9),
                "agent.target_tau": (0.005, 0.05),
                "agent.epsilon_end": (0.01, 0.2),
            },
        ),
    ],
)
def test_each_member_equals_its_config_run_alone_bitwise_and_is_logged(tmp_path, name, fields, varied, catch_alone):
    """Over the session's 2 devices, one member at a time: each computes exactly what its own program does."""
    config = population_config(name, fields, varied, members_in_parallel=1)
    result = podracer.train(config, workdir=str(tmp_path))
    assert result.steps == 2 * fields["total_steps"]  # Every member's steps.
    assert_members_logged_and_summarised(result, tmp_path, members=2)
    for index in range(2):
        alone = catch_alone(index) if name == "anakin_catch" else podracer.train(population.member(config, index))
        for a, b in zip(
            jax.tree.leaves(member_state(result, index)), jax.tree.leaves(alone.learner_state), strict=True
        ):
            np.testing.assert_array_equal(a, np.asarray(b))
        member_records = [record["members"][index] for record in result.history]
        assert len(member_records) == len(alone.history)
        for mine, its in zip(member_records, alone.history, strict=True):
            assert mine["member"] == index
            for field, value in mine.items():
                if field != "member":
                    assert value == its[field] or (math.isnan(value) and math.isnan(its[field])), (index, field)
    assert not all(np.array_equal(leaf[0], leaf[1]) for leaf in jax.tree.leaves(result.learner_state))


@pytest.mark.slow  # Three runs and a population, about 20 s.
@pytest.mark.parametrize(("in_parallel", "members"), [(0, 2), (2, 3)])
def test_vmapped_members_match_their_runs_alone_up_to_float_rounding(in_parallel, members, catch_alone):
    """Every member vmapped at once, or in groups of 2 (and the 1 left): XLA orders a batch's sums differently."""
    config = population_config("anakin_catch", CATCH_CLIPPED, first_members(members), members_in_parallel=in_parallel)
    result = podracer.train(config)
    for index in range(members):
        alone = catch_alone(index)
        for a, b in zip(
            jax.tree.leaves(member_state(result, index)), jax.tree.leaves(alone.learner_state), strict=True
        ):
            np.testing.assert_allclose(a, np.asarray(b), rtol=1e-4, atol=1e-6)


def test_summary_of_members_ignores_those_without_episodes():
    records = [{"mean_episode_return": value} for value in (1.0, math.nan, 3.0, -2.0, 0.5)]
    summary = population.summary(records)
    finite = np.array([1.0, 3.0, -2.0, 0.5])
    assert summary["best_member"] == 2 and summary["best_return"] == 3.0
    assert summary["median_return"] == pytest.approx(0.75)
    assert summary["return_spread"] == pytest.approx(np.percentile(finite, 75) - np.percentile(finite, 25))
    empty = population.summary([{"mean_episode_return": math.nan}] * 2)
    assert empty["best_member"] == -1 and math.isnan(empty["median_return"])


def test_a_hyperparameter_the_agent_branches_on_is_named():
    """An agent that reads a value as a Python number (an `if`) cannot vary it; the error names that field."""

    def trace(varied):
        def program(values):
            scale = values.get("agent.scale", 1.0)
            if values.get("agent.threshold", 0.0) > 0:  # Decides the program's structure.
                scale = scale * 2
            return scale

        return jax.eval_shape(jax.vmap(program), varied)  # Each member sees its own scalar, as in the program.

    varied = {"agent.scale": np.ones(2, np.float32), "agent.threshold": np.ones(2, np.float32)}
    with pytest.raises(ConfigError, match=r"config\.population\.agent\.threshold: the agent reads it"):
        population.naming_fixed_fields(trace, varied)
    assert population.naming_fixed_fields(trace, {"agent.scale": varied["agent.scale"]}).shape == (2,)
