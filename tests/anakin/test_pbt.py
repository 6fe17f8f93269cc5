"""Population-based training on Anakin: who copies whom, what the copies explore, lineages logged, exact resumes.

Selection and exploration are checked against hand-worked draws; a run against
what its own records say (the ranking from each member's episodes, the copied
learner states equal bitwise, the hyperparameters a factor away from their
parent's); a run killed and resumed against one never stopped; and a pod of
2 processes of 4 forced devices each.
"""

import json
import math
import random

import jax
import numpy as np
import pytest

import podracer
from podracer.anakin import exploit_explore
from podracer.anakin.exploit_explore import PBT
from podracer.config.errors import ConfigError
from podracer.run.metrics_writer import MEMBERS, PARENT
from tests.helpers import finish, load_config, run_module, start_pod, start_program, wait_until

LEARNING_RATES = (3e-4, 1e-3, 3e-3, 1e-2)
# Catch with 4 members, a ready point every 2 updates of 256 steps, one update a dispatch: 12 updates, 6 ready points.
CATCH = {"num_envs": 32, "unroll_length": 8, "updates_per_dispatch": 1, "total_steps": 256 * 12}
CATCH.update({"network.hidden_sizes": (16,), "population.seed": (0, 1, 2, 3)})
CATCH.update({"population.optimizer.learning_rate": LEARNING_RATES, "population.pbt.ready_steps": 512})
CATCH.update({"population.pbt.exploit_fraction": 0.5, "population.pbt.resample_probability": 0.25})


class ScriptedDraws:
    """A stand-in for `np.random.Generator` that returns the given draws in order, as a hand-worked example needs."""

    def __init__(self, integers=(), uniforms=()):
        self._integers, self._uniforms = list(integers), list(uniforms)

    def integers(self, high):
        value = self._integers.pop(0)
        assert 0 <= value < high
        return value

    def random(self):
        return self._uniforms.pop(0)


def pbt_of(prior, factors=(0.8, 1.25), resample_probability=0.5, bounds=None) -> PBT:
    members = len(next(iter(prior.values())))
    return PBT(
        ready_updates=1,
        exploited=1,
        factors=np.asarray(factors),
        resample_probability=resample_probability,
        bounds=bounds or {},
        prior={field: np.asarray(values, np.float32) for field, values in prior.items()},
        seeds=(0,),
        return_sums=np.zeros(members),
        episodes=np.zeros(members),
    )


def test_members_rank_by_fitness_with_no_episodes_last_and_ties_to_the_lower_index():
    assert exploit_explore.rank(np.array([1.0, 5.0, np.nan, 3.0, 5.0, -2.0])).tolist() == [1, 4, 3, 0, 5, 2]


def test_the_bottom_members_copy_members_drawn_from_the_top_and_the_rest_keep_their_own():
    fitness = np.array([1.0, 5.0, np.nan, 3.0, 2.0, 4.0])  # Best first: 1, 5, 3, 4, 0, 2.
    draws = ScriptedDraws(integers=[1, 0])  # Member 0 takes the top's second (5), member 2 its first (1).
    parents = exploit_explore.select(fitness, 2, draws)
    assert parents.tolist() == [5, 1, 1, 3, 4, 5]


def test_a_copy_perturbs_or_resamples_each_field_from_its_parent_and_is_clipped_to_its_bounds():
    prior = {"agent.gamma": (0.9, 0.95, 0.99), "optimizer.learning_rate": (1e-3, 2e-3, 4e-3)}
    pbt = pbt_of(prior, bounds={"agent.gamma": (0.0, 0.97)})
    now = {"agent.gamma": np.float32([0.9, 0.95, 0.96]), "optimizer.learning_rate": np.float32([1e-3, 2e-3, 4e-3])}
    parents = np.array([2, 1, 2])  # Member 0 copies member 2; 1 and 2 keep theirs.
    # Fields in name order: gamma perturbed (0.7 >= 0.5) by factor 1 (1.25), clipped; lr resampled (0.2) as prior 0.
    draws = ScriptedDraws(integers=[1, 0], uniforms=[0.7, 0.2])
    explored = exploit_explore.explore(pbt, now, parents, draws)
    assert explored["agent.gamma"].tolist() == np.float32([0.97, 0.95, 0.96]).tolist()  # min(0.96 * 1.25, 0.97)
    assert explored["optimizer.learning_rate"].tolist() == np.float32([1e-3, 2e-3, 4e-3]).tolist()
    draws = ScriptedDraws(integers=[0, 0], uniforms=[0.9, 0.6])  # Both perturbed by 0.8.
    explored = exploit_explore.explore(pbt, now, parents, draws)
    assert explored["agent.gamma"][0] == np.float32(np.float32(0.96) * 0.8)
    assert explored["optimizer.learning_rate"][0] == np.float32(np.float32(4e-3) * 0.8)
    assert explored["optimizer.learning_rate"].dtype == np.float32


def member_fitness(window: list[dict], members: int) -> np.ndarray:
    """Each member's mean return over the records of one ready interval, from its logged means and counts."""
    sums, counts = np.zeros(members), np.zeros(members)
    for record in window:
        for member in record[MEMBERS]:
            if member["episodes"]:
                sums[member["member"]] += member["mean_episode_return"] * member["episodes"]
                counts[member["member"]] += member["episodes"]
    return sums / counts


@pytest.mark.slow  # About 5 s: a Catch population.
def test_a_pbt_run_copies_the_best_members_states_and_logs_every_members_lineage_and_hyperparameters():
    """Checked against the run's own records: at each ready point the members with the worse half of the interval's
    returns take a better member's learner state (bitwise) and its learning rate, perturbed or resampled."""
    copies = []

    def after_ready(event):  # The state the callback sees is the one after the ready point's copies.
        parents = [member[PARENT] for member in event.record[MEMBERS]]
        params = jax.device_get(event.state.learner.params)
        for child, parent in enumerate(parents):
            if child != parent:
                same = jax.tree.map(lambda x, c=child, p=parent: np.array_equal(x[c], x[p]), params)
                copies.append(all(jax.tree.leaves(same)))

    history = podracer.train(load_config("anakin_catch", CATCH), callbacks=[after_ready]).history
    assert len(history) == 12 and len(copies) == 6 * 2 and all(copies)
    prior = set(np.float32(LEARNING_RATES).tolist())
    for index in range(1, 12, 2):  # The ready points: after every second update.
        window, following = history[index - 1 : index + 1], history[index + 1] if index + 1 < 12 else None
        ranked = exploit_explore.rank(member_fitness(window, 4)).tolist()
        parents = [member[PARENT] for member in history[index][MEMBERS]]
        assert window[0][MEMBERS][0][PARENT] == 0  # No copies between ready points.
        for member, parent in enumerate(parents):
            if member in ranked[2:]:
                assert parent in ranked[:2]
                if following is not None:
                    rate = np.float32(following[MEMBERS][member]["optimizer.learning_rate"]).item()
                    was = np.float32(history[index][MEMBERS][parent]["optimizer.learning_rate"])
                    assert rate in prior or rate in {np.float32(was * factor).item() for factor in (0.8, 1.25)}
            else:
                assert parent == member


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"population.pbt.exploit_fraction": 0.6}, "population.pbt.exploit_fraction", "<= 0.5"),
        ({"population.pbt.exploit_fraction": 0.2}, "population.pbt.exploit_fraction", "exploits none"),
        ({"population.pbt.ready_steps": 256 * 12}, "population.pbt.ready_steps", "whole run"),
        ({"population.pbt.ready_steps": 100}, "population.pbt.ready_steps", "less than one update"),
        ({"population.pbt.perturb_factors": (0.8, -1.0)}, "population.pbt.perturb_factors", "positive"),
        ({"population.pbt.bounds.agent.gamma": (0.9, 1.0)}, "population.pbt.bounds.agent.gamma", "does not vary"),
        ({"population.pbt.bounds.optimizer.learning_rate": (1.0, 0.1)}, "learning_rate", "not below"),
        ({"population.pbt.ready_every": 5}, "population.pbt.ready_every", "no PBT setting"),
    ],
)
def test_pbt_settings_that_cannot_work_are_refused_naming_the_field(fields, field, message):
    config = load_config("anakin_catch", {**CATCH, **fields})
    with pytest.raises(ConfigError, match=message) as error:
        podracer.validate_config(config)
    assert error.value.field.endswith(field)


def test_pbt_without_a_population_is_refused():
    config = load_config("anakin_catch", {"population.pbt.ready_steps": 512})
    with pytest.raises(ConfigError, match="needs a population"):
        podracer.validate_config(config)


@pytest.mark.slow  # About 20 s: three runs in fresh processes.
def test_a_pbt_run_killed_and_resumed_equals_one_never_stopped(tmp_path):
    """The hyperparameters, the episodes counted towards the next ranking and every record come back exactly."""
    overrides = {**CATCH, "checkpoint.every_updates": 1, "checkpoint.every_minutes": 0}
    args = ("anakin_catch", json.dumps(overrides))
    whole = run_module("resumable_run", *args, str(tmp_path / "whole"), "0", num_devices=2)
    assert whole.returncode == 0, whole.stderr
    killed = tmp_path / "killed"
    lines = random.Random(0).choice([3, 4, 5])  # Between ready points (3, 5) and at one (4).
    process = start_program("resumable_run", *args, str(killed), "0.3", str(lines + 1), num_devices=2)
    wait_until(lambda: (killed / "metrics.jsonl").exists() and metrics(killed, lines) is not None, "records", [process])
    process.kill()
    process.wait()
    resumed = run_module("resumable_run", *args, str(killed), "0", num_devices=2)
    assert resumed.returncode == 0 and "resuming from" in resumed.stderr, resumed.stderr
    assert resumed.stdout.splitlines()[-1] == whole.stdout.splitlines()[-1]  # The learner state's digest.
    assert metrics(killed) == metrics(tmp_path / "whole")


def metrics(workdir, at_least: int = 0) -> list[dict] | None:
    """The records without their timings; None while fewer than `at_least` are written."""
    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    timing = ("steps_per_second", "compile_seconds", "wall_seconds")
    kept = [{k: v for k, v in record.items() if k not in timing} for record in records if "member" not in record]
    return kept if len(kept) >= at_least else None


@pytest.mark.slow  # About 25 s: a pod of 2 processes.
def test_a_pbt_population_trains_over_a_pod_of_two_processes_on_eight_devices(tmp_path):
    """Every process ranks, draws and copies alike, so their learner states stay equal; records carry lineages."""
    pod = start_pod("train_in_pod", 2, 4, args=("anakin_catch", json.dumps(CATCH), str(tmp_path)))
    outputs = finish(pod)
    results = [json.loads(next(line for line in out.splitlines() if line.startswith("{"))) for out, _ in outputs]
    assert [result["devices"] for result in results] == [8, 8]
    assert results[0]["digest"] == results[1]["digest"]
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    parents = [record[PARENT] for record in records if "member" in record]
    assert len(parents) == 12 * 4 and any(parent != index % 4 for index, parent in enumerate(parents))
    assert all(math.isfinite(record["optimizer.learning_rate"]) for record in records if "member" in record)


@pytest.mark.slow  # About 8 s: two Catch populations.
def test_the_lineage_figure_draws_a_pbt_runs_members_and_the_plot_command_refuses_a_run_without_pbt(tmp_path, capsys):
    from podracer import cli

    podracer.train(load_config("anakin_catch", CATCH), workdir=str(tmp_path / "pbt"))
    assert cli.run(["plot", str(tmp_path / "pbt"), "--pbt", "--out", str(tmp_path / "pbt.png")]) == 0
    assert "the lineage of 4 members" in capsys.readouterr().out and (tmp_path / "pbt.png").stat().st_size > 0
    podracer.train(load_config("anakin_catch", {**CATCH, "population.pbt.ready_steps": 0}), workdir=str(tmp_path / "f"))
    assert cli.run(["plot", str(tmp_path / "f"), "--pbt", "--out", str(tmp_path / "f.png")]) == 2
    assert "is no PBT run" in capsys.readouterr().err
