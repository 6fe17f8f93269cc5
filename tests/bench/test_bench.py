"""`podracer bench --quick` end to end, in a fresh process: the form of what it writes, not the timings."""

import csv

import pytest

from podracer.bench import charts, report
from podracer.devices import host_memory
from tests.helpers import HANG_SECONDS, run_as_user

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # Two figures on forced CPU devices: about 30 s on 2 cores with a cold compilation cache.
def test_quick_bench_writes_a_csv_a_table_and_a_figure_each(tmp_path):
    """Figure 4a (Anakin) and the pipeline (envpool alone, Sebulba stepping from Python and compiled) end to end;
    the other figures' plans, rows and charts are tested without measuring (test_plans, test_report, test_charts)."""
    from matplotlib.image import imread  # Here: matplotlib's import costs every test process at collection.

    out = tmp_path / "bench"
    # As a user runs it (no forced devices, none of the session's XLA flags); a hang's bound, not the bench's: it
    # measures for minutes on a busy machine.
    arguments = ("podracer", "bench", "--quick", "--figures", "4a,pipeline", "--out", str(out))
    result = run_as_user(*arguments, timeout=3 * HANG_SECONDS)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with open(out / "bench.csv", newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert tuple(reader.fieldnames) == report.COLUMNS
    assert {row["figure"] for row in rows} == {"4a", "pipeline"}
    assert {row["sweep"] for row in rows} == {"devices", "pipeline"}
    for row in rows:
        low, median, high = float(row["min"]), float(row["median"]), float(row["max"])
        assert 0 < low <= median <= high and row["repeats"] == "1" and row["unit"] in ("steps/s", "frames/s")
        assert all(row[column] for column in ("cpu_model", "cpu_cores", "accelerator", "jax_version")), row
        assert row["podracer_commit"] and row["platform"] == "cpu"
        assert row["glibc_tunables"] == host_memory.HUGE_PAGES  # The command restarted itself with huge pages.
    # Every 4a row and the pipeline's Sebulba rows (host and compiled stepping) carry an efficiency, computed from
    # the rates beside them (on a loaded machine the ratios themselves can be anything, so they are recomputed).
    assert sum(bool(row["efficiency"]) for row in rows) == sum(row["figure"] == "4a" for row in rows) + 2
    scaling = [row for row in rows if row["figure"] == "4a"]
    on_one = float(next(row["median"] for row in scaling if row["devices"] == "1"))
    for row in scaling:
        expected = float(row["median"]) / (int(row["devices"]) * on_one)
        assert float(row["efficiency"]) == pytest.approx(expected, rel=1e-3), row
    (raw,) = (r for r in rows if r["figure"] == "pipeline" and r["network"] == "none")
    trained = [r for r in rows if r["figure"] == "pipeline" and r["network"] != "none"]
    assert sorted(r["env_stepping"] for r in trained) == ["compiled", "host"]
    for row in trained:
        assert float(row["efficiency"]) == pytest.approx(float(row["median"]) / float(raw["median"]), rel=1e-3)

    for name in ("fig4a.png", "pipeline.png"):
        assert name in charts.FILE_NAMES.values()
        data = (out / name).read_bytes()
        assert data[:8] == PNG_SIGNATURE and 10_000 < len(data) < 2_000_000, name
        height, width = imread(out / name).shape[:2]
        assert 300 <= width <= 2000 and 300 <= height <= 1200, (name, width, height)

    table = [line for line in (out / "bench.md").read_text().splitlines() if line.startswith("|")]
    assert "median" in table[0] and set(table[1].replace("|", "").split()) <= {"---", "---:"}
    assert len(table) == 2 + len(rows)
