"""`podracer bench`'s command line: its defaults, and bad arguments (exit 2, one line, nothing written)."""

import datetime

import pytest

from podracer import cli
from podracer.bench import charts, command, command_line, machine
from podracer.config.errors import UsageError

NOW = datetime.datetime(2026, 11, 22, 21, 30, 5, tzinfo=datetime.UTC)


def parse_arguments(argv, now=None):
    """The `Options` of `podracer bench ARGV`, through the command line's own parser."""
    return command_line.options(cli.parse(["bench", *argv]), now=now)


def test_defaults_are_the_four_figures_three_repeats_and_a_timestamped_folder():
    options = parse_arguments([], now=NOW)
    assert options == command_line.Options(
        figures=("4a", "4b", "4c", "pipeline"),
        repeats=3,
        quick=False,
        out="runs/bench/20261122T213005Z",
        cpu=False,
        devices=None,
        sebulba_env="pong",
    )


def test_quick_repeats_once_on_cartpole_unless_told_otherwise(tmp_path):
    quick = parse_arguments(["--quick"])
    assert (quick.repeats, quick.sebulba_env) == (1, "cartpole")
    options = parse_arguments(
        ["--quick", "--repeats=2", "--sebulba-env", "pong", "--figures", "pipeline,4a", "--out", str(tmp_path)]
    )
    assert (options.repeats, options.sebulba_env, options.figures, options.out) == (
        2,
        "pong",
        ("4a", "pipeline"),
        str(tmp_path),
    )


def test_the_opt_in_figures_run_only_when_named():
    assert {"suites", "population", "muzero", "evaluation"} <= set(command_line.FIGURES) - set(
        command_line.DEFAULT_FIGURES
    )
    assert parse_arguments(["--figures", "population,4a"]).figures == ("4a", "population")


def test_every_figure_has_a_plan_and_a_chart_in_the_order_the_help_lists_them(capsys):
    assert list(command.PLANS) == list(command_line.FIGURES) == list(charts.FILE_NAMES)
    with pytest.raises(SystemExit) as exit:
        cli.run(["bench", "--help"])
    assert exit.value.code == 0
    listed = " ".join(capsys.readouterr().out.split())  # Unwrapped.
    positions = [listed.index(f"{figure}: {what}") for figure, what in command_line.FIGURES.items()]
    assert positions == sorted(positions)


def write_results(folder):
    folder.mkdir()
    (folder / "bench.csv").write_text("figure\n")
    return folder


BAD = [
    (["--figures", "4d"], ["argument --figures: '4d'", "4a,4b,4c,pipeline,suites,population,muzero,evaluation"]),
    (["--figures="], ["argument --figures: ''"]),
    (["--repeats", "0"], ["argument --repeats: '0'", "at least 1"]),
    (["--repeats=three"], ["argument --repeats: 'three'"]),
    (["--devices", "-2"], ["argument --devices: '-2'"]),
    (["--sebulba-env", "breakout"], ["--sebulba-env", "'breakout'", "'pong', 'cartpole'"]),
    (["--quick", "--fast"], ["unknown argument '--fast'", "see podracer bench --help"]),
    (["--out"], ["argument --out: expected one argument"]),
]


@pytest.mark.parametrize(("args", "words"), BAD)
def test_a_bad_argument_is_one_line_and_exit_2_with_nothing_written(tmp_path, monkeypatch, capsys, args, words):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "results"
    assert cli.run(["bench", *args, "--out", str(out)] if "--out" not in args else ["bench", *args]) == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("podracer bench: error: ") and stderr.count("\n") == 1, stderr
    assert all(word in stderr for word in words), stderr
    assert list(tmp_path.iterdir()) == []


def test_an_out_folder_with_results_or_a_file_is_refused(tmp_path, capsys):
    earlier = write_results(tmp_path / "earlier")
    (tmp_path / "file").write_text("")
    for out in (earlier, tmp_path / "file"):
        assert cli.run(["bench", "--out", str(out)]) == 2
        assert "already holds results" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["bench.csv", "earlier", "file"]


def test_more_devices_than_the_accelerators_is_refused_unless_on_forced_cpu_devices():
    gpus = machine.Devices("gpu", "NVIDIA H100", 2)
    with pytest.raises(UsageError, match="--devices 4: this machine has 2 gpu devices .*--cpu"):
        command.plan_setup(parse_arguments(["--devices", "4"]), gpus)
    assert command.plan_setup(parse_arguments(["--devices", "4", "--cpu"]), gpus).max_devices == 4
    assert command.plan_setup(parse_arguments([]), gpus).max_devices == 2
    cpu = command.plan_setup(parse_arguments([]), machine.Devices("cpu", "cpu", 1))
    assert cpu.forced_cpu and cpu.max_devices >= 1  # One forced device per core.


def test_the_compilation_cache_is_the_users_own_or_one_under_the_cache_home():
    assert command.compilation_cache_env({"JAX_COMPILATION_CACHE_DIR": "/mine"}) == {}
    env = command.compilation_cache_env({"XDG_CACHE_HOME": "/cache"})
    assert env["JAX_COMPILATION_CACHE_DIR"] == "/cache/podracer/jax-compilation-cache"
