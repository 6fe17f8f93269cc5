"""`podracer.plot` and `podracer plot`: the figures draw the logged values, and bad input is refused clearly.

Records are written by podracer's own `MetricsWriter`, so the tests read back
what a run writes (NaN returns as JSON null included).
"""

import math
import os
import struct

import numpy as np
import pytest
from ml_collections import ConfigDict

from podracer import cli, plot
from podracer.run.metrics_writer import MetricsWriter
from tests.helpers import run_cli

SHARES = (
    "actor_env_share",
    "actor_inference_share",
    "actor_compiled_share",
    "actor_wait_share",
    "learner_share",
    "learner_wait_share",
)


def anakin_records(scale: float = 1.0) -> list[dict]:
    return [
        {
            "step": 1000 * (i + 1),
            "mean_episode_return": math.nan if i == 1 else scale * i,  # A window where no episode ended.
            "steps_per_second": 5000.0 + 10 * i,
            "wall_seconds": 3.0 + 0.5 * i,
        }
        for i in range(6)
    ]


def sebulba_records() -> list[dict]:
    rng = np.random.default_rng(0)
    records = []
    for i in range(5):
        record = {"step": 640 * (i + 1), "mean_episode_return": 20.0 + 5 * i, "wall_seconds": 5.0 + i}
        record.update(steps_per_second=900.0 + i, frames_per_second=4 * (900.0 + i), seconds=1.0 + 0.2 * i)
        record.update(
            {name: float(value) for name, value in zip(SHARES, rng.uniform(0.05, 0.45, len(SHARES)), strict=True)}
        )
        records.append(record)
    return records


def write_run(workdir, records) -> str:
    writer = MetricsWriter(str(workdir), ConfigDict({"seed": 0}))
    for record in records:
        writer.write(record)
    writer.close()
    return str(workdir)


def png_size(path) -> tuple[int, int]:
    with open(path, "rb") as f:
        header = f.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    return struct.unpack(">II", header[16:24])


def line_data(ax) -> dict[str, np.ndarray]:
    return {line.get_label(): line.get_xydata() for line in ax.get_lines()}


def test_read_metrics_gives_back_what_the_run_wrote(tmp_path):
    records = anakin_records()
    read = plot.read_metrics(write_run(tmp_path / "run", records))
    assert len(read) == len(records)
    for got, expected in zip(read, records, strict=True):
        np.testing.assert_equal(got, expected)  # NaN (written as null) reads back as NaN.


def test_read_metrics_leaves_out_a_last_line_cut_short_and_names_a_broken_one(tmp_path):
    workdir = write_run(tmp_path / "run", anakin_records())
    path = os.path.join(workdir, "metrics.jsonl")
    with open(path, "a") as f:
        f.write('{"step": 7000, "mean_episode_re')  # Killed mid-write.
    assert len(plot.read_metrics(workdir)) == 6
    with open(path) as f:
        lines = f.read().splitlines()
    lines[2] = "not json"
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="metrics.jsonl, line 3"):
        plot.read_metrics(workdir)


def test_read_metrics_refuses_a_missing_workdir_and_one_without_records(tmp_path):
    with pytest.raises(plot.MetricsNotFound, match="does not exist"):
        plot.read_metrics(str(tmp_path / "nowhere"))
    with pytest.raises(plot.MetricsNotFound, match="has no metrics.jsonl"):
        plot.read_metrics(str(tmp_path))
    (tmp_path / "metrics.jsonl").write_text("")
    with pytest.raises(plot.MetricsNotFound, match="no records yet"):
        plot.read_metrics(str(tmp_path))


def test_summary_draws_each_runs_logged_values():
    runs = {"a": anakin_records(), "b": anakin_records(scale=2.0)}
    figure = plot.summary(runs)
    by_steps, by_time, rates = figure.axes  # No Sebulba telemetry: one row of three panels.
    for label, records in runs.items():
        steps = [r["step"] for r in records]
        returns = [r["mean_episode_return"] for r in records]
        np.testing.assert_array_equal(line_data(by_steps)[label], np.column_stack([steps, returns]))
        np.testing.assert_array_equal(
            line_data(by_time)[label], np.column_stack([[r["wall_seconds"] for r in records], returns])
        )
        np.testing.assert_array_equal(
            line_data(rates)[label], np.column_stack([steps, [r["steps_per_second"] for r in records]])
        )
    assert "a (frames)" not in line_data(rates)  # Frames are drawn only where they differ from steps.


def test_a_runs_evaluations_are_drawn_dashed_in_its_colour_with_a_band_of_one_standard_error():
    records = anakin_records()
    for record, (mean, stderr) in zip(records[1::2], [(5.0, 0.5), (7.0, 1.0), (9.0, 0.25)], strict=True):
        record.update(eval_mean_return=mean, eval_return_stderr=stderr)
    by_steps = plot.summary({"a": records}).axes[0]
    evaluated = [r for r in records if "eval_mean_return" in r]
    expected = np.column_stack([[r["step"] for r in evaluated], [r["eval_mean_return"] for r in evaluated]])
    np.testing.assert_array_equal(line_data(by_steps)["a (evaluation)"], expected)
    lines = {line.get_label(): line for line in by_steps.get_lines()}
    assert lines["a (evaluation)"].get_color() == lines["a"].get_color()
    (band,) = by_steps.collections
    low = [r["eval_mean_return"] - r["eval_return_stderr"] for r in evaluated]
    high = [r["eval_mean_return"] + r["eval_return_stderr"] for r in evaluated]
    vertices = band.get_paths()[0].vertices
    assert set(np.round(vertices[:, 1], 6)) == set(np.round(low + high, 6))


def population_records(members: int = 3) -> list[dict]:
    records = []
    for i, record in enumerate(anakin_records()):
        returns = [math.nan if i == 1 else member + 0.5 * i for member in range(members)]
        record["members"] = [
            {"step": record["step"], "member": m, "mean_episode_return": value} for m, value in enumerate(returns)
        ]
        records.append(record)
    return records


def test_a_populations_members_are_written_line_by_line_read_back_and_drawn_one_line_each(tmp_path):
    records = population_records()
    workdir = write_run(tmp_path / "population", records)
    lines = (tmp_path / "population" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 6 * 4 and '"member": 2' in lines[2] and '"member"' not in lines[3]
    read = plot.read_metrics(workdir)
    for got, expected in zip(read, records, strict=True):
        np.testing.assert_equal(got, expected)
    by_steps = line_data(plot.summary(read).axes[0])
    assert sorted(by_steps) == ["member 0", "member 1", "member 2"]
    for member in range(3):
        returns = [r["members"][member]["mean_episode_return"] for r in records]
        np.testing.assert_array_equal(by_steps[f"member {member}"][:, 1], returns)
    together = line_data(plot.summary({"lr": read, "single": anakin_records()}).axes[0])
    assert sorted(together) == ["lr: member 0", "lr: member 1", "lr: member 2", "single"]


def test_time_shares_are_the_window_weighted_means_of_the_logged_shares():
    records = sebulba_records()
    figure = plot.summary(records)
    assert len(figure.axes) == 4  # A second row: the time shares.
    np.testing.assert_allclose(
        line_data(figure.axes[2])["run (frames)"][:, 1], [r["frames_per_second"] for r in records]
    )
    bars = {container.get_label(): container.patches[0] for container in figure.axes[3].containers}
    later = records[1:]  # The first window (inference compilations) is left out.
    weights = np.array([r["seconds"] for r in later])
    for field, name in {**plot.ACTOR_SHARES, **plot.LEARNER_SHARES}.items():
        expected = sum(w * r[field] for w, r in zip(weights, later, strict=True)) / weights.sum()
        np.testing.assert_allclose(bars[name].get_width(), expected, rtol=1e-12)


def test_time_shares_of_logs_without_the_compiled_share_draw_the_others():
    records = [{k: v for k, v in record.items() if k != "actor_compiled_share"} for record in sebulba_records()]
    bars = {container.get_label() for container in plot.summary(records).axes[3].containers}
    assert bars == {
        name for field, name in {**plot.ACTOR_SHARES, **plot.LEARNER_SHARES}.items() if field in SHARES[:2] + SHARES[3:]
    }


def test_frames_shows_each_picture_with_its_title():
    images = [np.full((10, 5), i, np.float32) for i in range(7)]
    figure = plot.frames(images, [f"t={i}" for i in range(7)], columns=4)
    shown = [ax for ax in figure.axes if ax.get_images()]
    assert len(figure.axes) == 8 and len(shown) == 7
    for i, ax in enumerate(shown):
        np.testing.assert_array_equal(ax.get_images()[0].get_array(), images[i])
        assert ax.get_title() == f"t={i}"


@pytest.mark.slow  # Two `podracer plot` processes, each importing matplotlib: about 4 s.
def test_plot_command_writes_one_image_for_one_run_and_for_several(tmp_path):
    anakin = write_run(tmp_path / "catch", anakin_records())
    sebulba = write_run(tmp_path / "cartpole", sebulba_records())
    one = run_cli("plot", anakin, "--out", str(tmp_path / "one.png"))
    assert one.returncode == 0, one.stderr
    width, height = png_size(tmp_path / "one.png")
    assert (width, height) == (plot.FIGURE_WIDTH_INCHES * plot.DPI, plot.ROW_HEIGHT_INCHES * plot.DPI)
    both = run_cli("plot", anakin, sebulba, "--out", str(tmp_path / "both.png"), "--title", "two runs")
    assert both.returncode == 0, both.stderr
    assert png_size(tmp_path / "both.png") == (width, 2 * height)  # Sebulba's time shares add a row.
    assert "2 runs, 11 log records" in both.stdout
    assert sorted(os.listdir(tmp_path)) == ["both.png", "cartpole", "catch", "one.png"]  # No partial files left.


@pytest.mark.parametrize(
    "arguments, words",
    [
        (["{tmp}/nowhere", "--out", "{tmp}/x.png"], ["nowhere", "does not exist", "--workdir"]),
        (["{tmp}/empty", "--out", "{tmp}/x.png"], ["empty", "has no metrics.jsonl"]),
        (["{tmp}/run"], ["arguments are required: --out"]),
        (["{tmp}/run", "--out", "{tmp}/x.jpeg"], ["x.jpeg", ".png"]),
        (["{tmp}/run", "--out", "{tmp}/no/such/folder/x.png"], ["folder does not exist"]),
        (["--out", "{tmp}/x.png"], ["arguments are required: WORKDIR"]),
        (["{tmp}/run", "--out", "{tmp}/x.png", "--dpi=3"], ["unknown argument '--dpi=3'"]),
    ],
)
def test_plot_command_refuses_bad_input_with_exit_2_and_writes_nothing(tmp_path, capsys, arguments, words):
    """In this process, for speed; the command's own exit status is checked once below."""
    write_run(tmp_path / "run", anakin_records())
    (tmp_path / "empty").mkdir()
    before = sorted(os.listdir(tmp_path))
    assert cli.run(["plot", *(argument.format(tmp=tmp_path) for argument in arguments)]) == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("podracer plot: error:")
    for word in words:
        assert word in stderr
    assert sorted(os.listdir(tmp_path)) == before


def test_plot_command_exits_2_for_a_workdir_without_metrics(tmp_path):
    result = run_cli("plot", str(tmp_path), "--out", str(tmp_path / "x.png"))
    assert result.returncode == 2 and "has no metrics.jsonl" in result.stderr
    assert os.listdir(tmp_path) == []
