"""bench.csv and bench.md from hand-made rows, and the efficiencies computed from rows."""

import csv
import dataclasses

import pytest

from podracer.bench import report
from podracer.bench.figures import anakin_scaling, evaluation_cost, pipeline, population_scaling
from podracer.bench.machine import Machine
from podracer.bench.records import Row
from tests.bench.rows import evaluation_row, meta_row, population_row, scaling_row

MACHINE = Machine(
    cpu_model="Test CPU @ 2.0GHz",
    cpu_cores=2,
    accelerator="none",
    jax_version="0.10.2",
    podracer_commit="abc1234",
    glibc_tunables="glibc.malloc.hugetlb=1",
)


def pipeline_rows(raw: float, trained: float) -> list[Row]:
    shape = dict(figure="pipeline", sweep="pipeline", env="CartPole-v1", platform="cpu", actor_threads=2)
    shape.update(envs_per_thread=16, unroll_length=20, repeats=1, unit="frames/s")
    return [
        Row(benchmark=pipeline.RAW, network="none", devices=0, median=raw, min=raw, max=raw, **shape),
        Row(
            benchmark="sebulba_cartpole_impala",
            network="mlp(64,64)",
            devices=2,
            actor_devices=1,
            learner_devices=1,
            median=trained,
            min=trained,
            max=trained,
            **shape,
        ),
    ]


def test_scaling_efficiency_is_the_share_of_linear_scaling():
    assert anakin_scaling.scaling_efficiency(rate=1500.0, devices=2, rate_on_one=1000.0) == pytest.approx(0.75)
    assert anakin_scaling.scaling_efficiency(rate=4000.0, devices=4, rate_on_one=1000.0) == pytest.approx(1.0)
    assert anakin_scaling.scaling_efficiency(rate=900.0, devices=8, rate_on_one=300.0) == pytest.approx(0.375)


def test_efficiencies_are_filled_in_from_the_rows_they_compare_with():
    rows = [scaling_row(1, 1000.0), scaling_row(2, 1500.0), scaling_row(4, 2000.0), *pipeline_rows(100.0, 85.0)]
    rows = pipeline.with_efficiency(anakin_scaling.with_efficiency(rows))
    assert [row.efficiency for row in rows] == pytest.approx([1.0, 0.75, 0.5, None, 0.85])  # envpool alone: none.


def test_a_benchmark_without_its_one_device_row_gets_no_efficiency():
    rows = anakin_scaling.with_efficiency(
        [scaling_row(2, 1500.0), scaling_row(1, 50.0, benchmark="anakin_cartpole_ppo")]
    )
    assert rows[0].efficiency is None and rows[1].efficiency == 1.0


def test_the_csv_has_every_column_and_the_machine_on_every_row(tmp_path):
    rows = anakin_scaling.with_efficiency([scaling_row(1, 1000.0), scaling_row(2, 1500.0), *pipeline_rows(100, 85)])
    path = tmp_path / "bench.csv"
    report.write_csv(str(path), rows, MACHINE)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        written = list(reader)
    assert tuple(reader.fieldnames) == report.COLUMNS
    assert {"figure", "sweep", "benchmark", "devices", "median", "min", "max", "repeats", "unit"} <= set(report.COLUMNS)
    assert {"efficiency", "cpu_model", "cpu_cores", "accelerator", "jax_version", "podracer_commit"} <= set(
        report.COLUMNS
    )
    assert len(written) == len(rows)
    assert [float(row["median"]) for row in written] == [1000.0, 1500.0, 100.0, 85.0]
    assert [row["efficiency"] for row in written] == ["1.0", "0.75", "", ""]  # Pipeline's are not computed here.
    assert all(row["cpu_model"] == "Test CPU @ 2.0GHz" and row["podracer_commit"] == "abc1234" for row in written)
    assert written[0]["actor_devices"] == "" and written[3]["actor_devices"] == "1"  # Empty where it does not apply.


def test_rates_in_the_csv_are_rounded_to_a_tenth_and_efficiencies_to_four_decimals(tmp_path):
    rows = anakin_scaling.with_efficiency([scaling_row(1, 1000.0), scaling_row(3, 1234.56789)])
    report.write_csv(str(tmp_path / "bench.csv"), rows, MACHINE)
    text = (tmp_path / "bench.csv").read_text()
    assert ",1234.6," in text and "1234.56789" not in text
    assert ",0.4115," in text  # 1234.56789 / (3 x 1000).


def test_the_markdown_table_has_a_header_a_separator_and_a_line_per_row():
    rows = pipeline.with_efficiency([scaling_row(1, 1_000_000.0), *pipeline_rows(100_000.0, 85_000.0)])
    text = report.markdown(rows, MACHINE)
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(rows)
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    assert header[:4] == ["figure", "sweep", "benchmark", "env"] and "median" in header and "efficiency" in header
    assert set(table[1].replace("|", "").split()) <= {"---", "---:"}
    assert all(line.count("|") == table[0].count("|") for line in table)
    assert "| 1,000,000 |" in table[2] and "1 device, 64 envs, unroll 16" in table[2]
    assert "2 threads x 16 envs, random actions" in table[3]
    assert table[4].rstrip(" |").endswith("0.85")
    assert "Test CPU @ 2.0GHz, 2 cores, accelerator none, JAX 0.10.2, podracer abc1234" in text


def test_a_populations_rate_per_member_is_its_total_over_the_members():
    row = population_row(8, 800_000.0)
    spread = population_scaling.per_member(row)
    assert (spread.median, spread.min, spread.max) == pytest.approx((100_000.0, 90_000.0, 110_000.0))


def test_population_rows_record_their_members_and_the_table_their_rate_per_member(tmp_path):
    rows = [scaling_row(2, 1_000_000.0), population_row(1, 500_000.0), population_row(64, 640_000.0)]
    rows.append(meta_row(256, 160_000.0))
    report.write_csv(str(tmp_path / "bench.csv"), rows, MACHINE)
    with open(tmp_path / "bench.csv", newline="") as f:
        assert [row["members"] for row in csv.DictReader(f)] == ["", "1", "64", "256"]
    table = [line for line in report.markdown(rows, MACHINE).splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    per_member = [[cell.strip() for cell in line.strip("|").split("|")][header.index("per member")] for line in table]
    assert per_member[2:] == ["", "500,000", "10,000", "625"]  # None for a single run.
    assert "2 devices, 64 members x 512 envs, unroll 16" in table[4]
    assert "2 devices, 256 members x 4 envs, unroll 16" in table[5]  # Meta-training's agents, as a population's.


def test_the_setting_of_a_point_says_what_distinguishes_it():
    split = Row(
        figure="4c",
        sweep="device_split",
        benchmark="sebulba_pong_impala",
        env="Pong-v5",
        network="mlp(64)",
        platform="cpu",
        devices=4,
        actor_devices=1,
        learner_devices=3,
        actor_threads=2,
        envs_per_thread=36,
        unroll_length=20,
        median=1.0,
        min=1.0,
        max=1.0,
        repeats=1,
        unit="frames/s",
    )
    assert report.setting(split) == "1 actor + 3 learner devices, 2 threads x 36 envs, unroll 20"
    replicas = Row(**{**split.__dict__, "sweep": "replicas", "devices": 2, "learner_devices": 1, "replicas": 2})
    assert report.setting(replicas) == "2 replicas x 1 actor + 1 learner device, 2 threads x 36 envs, unroll 20"
    shared = Row(**{**split.__dict__, "devices": 1, "learner_devices": 1})
    assert report.setting(shared).startswith("1 device shared by actors and learner")


def test_evaluation_rows_are_told_apart_and_compared_with_their_benchmark_without_evaluation(tmp_path):
    rows = [scaling_row(1, 900.0), evaluation_row(0, 1000.0), evaluation_row(10, 990.0), evaluation_row(1, 968.0)]
    rows = evaluation_cost.with_efficiency([dataclasses.replace(row, eval_share=0.03) for row in rows[:3]] + rows[3:])
    assert [row.efficiency for row in rows] == pytest.approx([None, 1.0, 0.99, 0.968])  # 4a's is not its figure's.
    assert [evaluation_cost.cost(row) for row in rows[2:]] == ["-1.0%", "-3.2%"]
    assert [report.setting(row) for row in rows[1:]] == [
        "2 devices, 512 envs, unroll 16, no evaluation",
        "2 devices, 512 envs, unroll 16, evaluation every 10 records",
        "2 devices, 512 envs, unroll 16, evaluation every record",
    ]
    report.write_csv(str(tmp_path / "bench.csv"), rows, MACHINE)
    with open(tmp_path / "bench.csv", newline="") as f:
        written = list(csv.DictReader(f))
    assert [row["eval_every_records"] for row in written] == ["", "0", "10", "1"]
    assert [row["eval_share"] for row in written] == ["0.03", "0.03", "0.03", ""]
    table = [line for line in report.markdown(rows, MACHINE).splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    shares = [[cell.strip() for cell in line.strip("|").split("|")][header.index("evaluating")] for line in table[3:]]
    assert shares == ["3.0%", "3.0%", ""]
    assert evaluation_cost.with_efficiency(rows[2:]) == rows[2:]  # Without the row to compare with, none.
