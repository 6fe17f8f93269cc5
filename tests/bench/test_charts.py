"""The figures drawn from hand-made rows: one per figure, and the population's totals and rates per member."""

import dataclasses

import pytest

from podracer import plot
from podracer.bench import charts, command
from podracer.bench.figures import evaluation_cost
from tests.bench.rows import evaluation_row, meta_row, muzero_row, population_row

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_every_figure_has_a_chart_and_a_file():
    assert set(charts.CHARTS) == set(charts.FILE_NAMES) == set(command.PLANS)


def test_the_population_chart_draws_the_total_and_the_rate_per_member_against_the_members():
    rows = [population_row(64, 640_000.0), population_row(1, 500_000.0), population_row(8, 600_000.0)]
    figure = charts.population(rows)  # In any order.
    total, each = figure.axes
    measured, linear = total.lines[0], total.lines[-1]
    assert list(measured.get_xdata()) == [1, 8, 64] and list(measured.get_ydata()) == [500_000, 600_000, 640_000]
    assert list(linear.get_ydata()) == [500_000, 4_000_000, 32_000_000]  # Dashed: 1 member's rate times M.
    assert list(each.lines[0].get_ydata()) == pytest.approx([500_000, 75_000, 10_000])
    assert [tick.get_text() for tick in each.get_xticklabels()] == ["1", "8", "64"]
    assert total.get_xscale() == each.get_xscale() == "log"
    plot.pyplot().close(figure)


def test_the_population_chart_is_written_as_a_png(tmp_path):
    path = tmp_path / charts.FILE_NAMES["population"]
    charts.draw("population", [population_row(1, 500_000.0), population_row(8, 600_000.0)], str(path))
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and 10_000 < len(data) < 2_000_000


def test_the_meta_training_chart_draws_linear_from_its_fewest_members_and_the_rate_per_member():
    rows = [meta_row(64, 120_000.0), meta_row(16, 40_000.0), meta_row(256, 160_000.0)]
    figure = charts.meta_training(rows)  # In any order.
    total, each = figure.axes
    measured, linear = total.lines[0], total.lines[-1]
    assert list(measured.get_xdata()) == [16, 64, 256] and list(measured.get_ydata()) == [40_000, 120_000, 160_000]
    assert list(linear.get_ydata()) == [40_000, 160_000, 640_000]  # Dashed: 16 members' rate times M / 16.
    assert list(each.lines[0].get_ydata()) == pytest.approx([2_500, 1_875, 625])
    assert "4 envs each, 2 devices" in each.get_xlabel()
    assert figure.get_suptitle().startswith("LPG meta-training's inner environment steps")
    plot.pyplot().close(figure)


def test_the_muzero_chart_draws_the_device_split_the_replicas_and_the_simulations():
    rows = [
        muzero_row("device_split", 4_000.0),
        muzero_row("replicas", 5_000.0, replicas=2),
        muzero_row("replicas", 3_000.0, replicas=1),
        muzero_row("simulations", 2_000.0, simulations=32),
        muzero_row("simulations", 4_000.0, simulations=4),
    ]
    figure = charts.muzero(rows)
    split, replicas, simulations = figure.axes
    assert [tick.get_text() for tick in split.get_xticklabels()] == ["1+1"]
    assert list(replicas.lines[0].get_xdata()) == [1, 2] and list(replicas.lines[-1].get_ydata()) == [3_000, 6_000]
    assert list(simulations.lines[0].get_xdata()) == [4, 32] and list(simulations.lines[0].get_ydata()) == [
        4_000,
        2_000,
    ]
    plot.pyplot().close(figure)


def test_the_evaluation_chart_draws_a_bar_per_frequency_with_its_cost_against_none():
    rows = [evaluation_row(1, 900.0), evaluation_row(0, 1000.0), evaluation_row(10, 990.0)]
    rows = evaluation_cost.with_efficiency([dataclasses.replace(rows[0], eval_share=0.085), *rows[1:]])
    figure = charts.evaluation_cost(rows)
    (ax,) = figure.axes
    assert [bar.get_height() for bar in ax.patches] == [1000.0, 990.0, 900.0]  # None, then ever more often.
    assert [tick.get_text() for tick in ax.get_xticklabels()] == ["off", "every 10 records", "every record"]
    assert [text.get_text() for text in ax.texts] == ["-1.0%", "-10.0%\nevaluating 8.5%"]
    plot.pyplot().close(figure)
