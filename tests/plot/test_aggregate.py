"""`podracer.plot.aggregate` and `podracer.plot.bootstrap`: statistics across seeds equal rliable's and NumPy's own.

The runs are workdirs written here by podracer's own `MetricsWriter` (a
`config.json` and a tiny `metrics.jsonl`), so nothing trains. Each run logs
50 episodes a record, so its final score, the mean return of its last 100
episodes, is the mean of its last two records' returns, computed by hand.
"""

import io
import sys

import numpy as np
import pytest
import scipy.stats
from ml_collections import ConfigDict
from rliable import library, metrics

from podracer import plot
from podracer.plot import aggregate, bootstrap
from podracer.run.metrics_writer import MEMBERS, MetricsWriter

REPS = 300  # Few resamples keep the tests fast; every comparison is with the same resamples.
SEED = 7


def records(returns, steps=None, episodes=50) -> list[dict]:
    """A run's records: one per return, at steps 100, 200, ... (or `steps`), each ending `episodes` episodes."""
    steps = steps or [100 * (i + 1) for i in range(len(returns))]
    return [
        {"step": step, "mean_episode_return": float(value), "episodes": episodes}
        for step, value in zip(steps, returns, strict=True)
    ]


def write_run(workdir, run_records, env="CartPole-v1", agent="ppo", population=None) -> str:
    config = ConfigDict({"env": {"name": env}, "agent": {"name": agent}, "population": population or {}})
    writer = MetricsWriter(str(workdir), config)
    for record in run_records:
        writer.write(record)
    writer.close()
    return str(workdir)


def final_score(returns) -> float:
    return (returns[-1] + returns[-2]) / 2  # Two records of 50 episodes each.


def rliable_own(scores: np.ndarray, func) -> tuple[np.ndarray, np.ndarray]:
    """rliable's estimates of `func` over `scores`, with its resamples drawn from the global generator seeded here."""
    np.random.seed(SEED)
    points, intervals = library.get_interval_estimates({"x": scores}, func, reps=REPS)
    return points["x"], intervals["x"]


def test_final_estimates_equal_rliables_own_and_the_iqm_numpys():
    scores = np.random.default_rng(0).normal(100.0, 30.0, size=(8, 1))
    state = np.random.get_state()
    iqm, mean = bootstrap.final_estimates(scores, REPS, 0.95, SEED)
    np.testing.assert_equal(np.random.get_state()[1], state[1])  # The caller's global generator is left as it was.
    (iqm_point,), ((iqm_low,), (iqm_high,)) = rliable_own(scores, lambda x: np.array([metrics.aggregate_iqm(x)]))
    (mean_point,), ((mean_low,), (mean_high,)) = rliable_own(scores, lambda x: np.array([metrics.aggregate_mean(x)]))
    assert (iqm.point, iqm.low, iqm.high) == (iqm_point, iqm_low, iqm_high)
    assert (mean.point, mean.low, mean.high) == (mean_point, mean_low, mean_high)
    middle_half = np.sort(scores.ravel())[2:6]  # 8 runs: the IQM is the mean of the middle four.
    assert iqm.point == pytest.approx(np.mean(middle_half), rel=1e-12)
    assert iqm.point == pytest.approx(scipy.stats.trim_mean(scores.ravel(), 0.25), rel=1e-12)
    assert mean.point == pytest.approx(np.mean(scores), rel=1e-12)
    assert iqm.low < iqm.point < iqm.high and mean.low < mean.point < mean.high


def test_the_curves_intervals_equal_rliables_own_step_by_step():
    scores = np.random.default_rng(1).normal(size=(6, 1, 5)).cumsum(axis=-1)
    curve = bootstrap.curve_estimates(scores, REPS, 0.95, SEED)
    steps = scores.shape[-1]
    point, interval = rliable_own(scores, lambda x: np.array([metrics.aggregate_iqm(x[..., t]) for t in range(steps)]))
    np.testing.assert_allclose(curve, np.concatenate([point[None], interval]), rtol=1e-12)
    np.testing.assert_allclose(curve[0], scipy.stats.trim_mean(scores[:, 0], 0.25, axis=0), rtol=1e-12)


def test_several_workdirs_are_runs_grouped_by_environment(tmp_path):
    cartpole = {f"cp{i}": [10.0 * i, 100.0 + i, 200.0 + 5 * i] for i in range(4)}
    catch = {f"catch{i}": [-1.0, 0.2 * i, 0.5 + 0.1 * i] for i in range(3)}
    workdirs = [write_run(tmp_path / name, records(r)) for name, r in cartpole.items()]
    workdirs += [write_run(tmp_path / name, records(r), env="Catch-bsuite") for name, r in catch.items()]
    groups = {group.task: group for group in aggregate.statistics(workdirs, reps=REPS, seed=SEED)}
    assert set(groups) == {"CartPole-v1", "Catch-bsuite"}
    for task, runs in (("CartPole-v1", cartpole), ("Catch-bsuite", catch)):
        group = groups[task]
        assert group.label == "ppo" and group.runs == tuple(str(tmp_path / name) for name in runs)
        expected = np.array([final_score(r) for r in runs.values()])
        np.testing.assert_allclose(group.scores, expected)
        assert group.iqm.point == pytest.approx(scipy.stats.trim_mean(expected, 0.25))
        assert group.mean.point == pytest.approx(np.mean(expected))
        np.testing.assert_array_equal(group.steps, [100, 200, 300])
        # At each step, the IQM of the runs' mean return of the last 100 episodes up to it; it ends at the final one.
        up_to = np.array([[r[0], (r[0] + r[1]) / 2, final_score(r)] for r in runs.values()])
        np.testing.assert_allclose(group.curve[0], scipy.stats.trim_mean(up_to, 0.25, axis=0))
        assert group.curve[0, -1] == pytest.approx(group.iqm.point)
    text = aggregate.table(list(groups.values()))
    assert "CartPole-v1" in text and "Catch-bsuite" in text and "raw returns" in text


def test_a_populations_members_are_its_runs_and_varied_hyperparameters_make_groups(tmp_path):
    member_returns = [[1.0, 2.0, 3.0], [2.0, 4.0, 8.0], [0.0, 1.0, 1.0], [5.0, 5.0, 6.0]]
    population_records = []
    for index in range(3):
        step = 100 * (index + 1)
        members = [{**records([r[index]], [step])[0], "member": m} for m, r in enumerate(member_returns)]
        population_records.append({"step": step, "mean_episode_return": 0.0, "episodes": 200, MEMBERS: members})
    seeds = {"seed": [0, 1, 2, 3]}
    workdir = write_run(tmp_path / "pop", population_records, population=seeds)
    (group,) = aggregate.statistics([workdir], reps=REPS, seed=SEED)
    assert group.runs == tuple(f"{workdir} member {m}" for m in range(4))
    np.testing.assert_allclose(group.scores, [final_score(r) for r in member_returns])
    varied = {**seeds, "optimizer": {"learning_rate": [1e-3, 1e-3, 3e-4, 3e-4]}}
    workdir = write_run(tmp_path / "lr", population_records, population=varied)
    groups = aggregate.load([workdir])
    assert {label: list(runs) for (_, label), runs in groups.items()} == {
        "ppo optimizer.learning_rate=0.001": [f"{workdir} member 0", f"{workdir} member 1"],
        "ppo optimizer.learning_rate=0.0003": [f"{workdir} member 2", f"{workdir} member 3"],
    }


def test_runs_logged_at_different_steps_are_interpolated_where_all_of_them_ran():
    first = (np.array([100.0, 200.0, 300.0]), np.array([0.0, 10.0, 20.0]))
    second = (np.array([150.0, 250.0, 350.0]), np.array([1.0, 3.0, 5.0]))
    steps, scores = aggregate.aligned([first, second])
    np.testing.assert_array_equal(steps, [150, 200, 250, 300])
    np.testing.assert_allclose(scores, [[5.0, 10.0, 15.0, 20.0], [1.0, 2.0, 3.0, 4.0]])


def test_the_figure_is_drawn_as_a_png(tmp_path):
    workdirs = [write_run(tmp_path / f"seed{i}", records([i, 2.0 * i, 3.0 + i])) for i in range(3)]
    groups = aggregate.statistics(workdirs, reps=REPS)
    figure = aggregate.figure(groups, title="three seeds")
    curve_ax, final_ax = figure.axes
    np.testing.assert_array_equal(curve_ax.get_lines()[0].get_ydata(), groups[0].curve[0])
    buffer = io.BytesIO()
    plot.save(figure, buffer, file_format="png")
    assert buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"


def test_too_few_runs_a_run_without_episodes_or_config_and_a_missing_rliable_are_clear_errors(tmp_path, monkeypatch):
    lone = write_run(tmp_path / "lone", records([1.0, 2.0]))
    with pytest.raises(ValueError, match="has 1 run .* at least 2"):
        aggregate.statistics([lone])
    silent = write_run(tmp_path / "silent", records([1.0, 2.0], episodes=0))
    with pytest.raises(ValueError, match="silent: no episode ended"):
        aggregate.statistics([lone, silent])
    (tmp_path / "lone" / "config.json").unlink()
    with pytest.raises(plot.MetricsNotFound, match="no config.json"):
        aggregate.load([lone])
    monkeypatch.setitem(sys.modules, "rliable", None)  # As if it were not installed.
    with pytest.raises(ImportError, match=r"pip install -e '\.\[stats\]'"):
        aggregate.statistics([lone])
