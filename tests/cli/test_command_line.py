"""The `podracer` command's parsers: help for every command, the documented usage, `configs`, `config show`,
and the errors found before JAX is imported (a bad `--workdir`) or from a config file that does not run.

In this process, for speed, but for the one check that reading arguments never imports JAX.
"""

import glob
import json
import os
import re
import subprocess
import sys

import pytest

import podracer
from podracer import cli
from podracer.cli import common, train_command
from podracer.config.errors import ConfigFileError, UsageError
from tests.helpers import HANG_SECONDS, ROOT, subprocess_env

CATCH = os.path.join(ROOT, "configs", "anakin_catch.py")

# What each command must offer, written out here rather than read from the parsers.
OPTIONS = {
    "podracer train": ["--config", "--config.FIELD=VALUE", "--workdir", "--noprogress", "--progress"],
    "podracer meta-train": ["--config", "--config.FIELD=VALUE", "--workdir", "--noprogress"],
    "podracer sweep": [
        "--config",
        "--config.FIELD=VALUE",
        "--space",
        "--trials",
        "--workdir",
        "--parallel",
        "--metric",
    ],
    "podracer evaluate": [
        "WORKDIR",
        "--episodes",
        "--video",
        "--video-episodes",
        "--greedy",
        "--sample",
        "--checkpoint",
        "--opponent",
    ],
    "podracer collect": [
        "WORKDIR",
        "--steps",
        "--out",
        "--greedy",
        "--sample",
        "--epsilon",
        "--num-envs",
        "--seed",
        "--checkpoint",
        "--member",
    ],
    "podracer export": ["WORKDIR", "--out", "--sample", "--checkpoint", "--member", "--batch-size"],
    "podracer configs": ["DIR"],
    "podracer config show": ["CONFIG_FILE", "--config.FIELD=VALUE"],
    "podracer plot": ["WORKDIR", "--out", "--title", "--aggregate", "--pbt"],
    "podracer bench": ["--figures", "--repeats", "--quick", "--out", "--cpu", "--devices", "--sebulba-env"],
}


def help_of(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit:
        cli.run([*argv, "--help"])
    assert exit.value.code == 0
    return capsys.readouterr().out


def test_every_command_has_help_listing_its_options(capsys):
    parsers = cli.command_parsers(cli.build_parser())
    assert [parser.prog for parser in parsers] == list(OPTIONS)
    top = help_of(capsys, [])
    for parser in parsers:
        assert parser.prog.split(" ", 1)[1].split()[0] in top
        text = help_of(capsys, parser.prog.split()[1:])
        assert text.startswith(f"usage: {parser.prog} ")
        for option in OPTIONS[parser.prog]:
            assert re.search(rf"^\s+{re.escape(option)}\b", text, re.M), (parser.prog, option)
        for action in parser._actions:  # Every option the parser has is explained, none hidden.
            assert (action.option_strings[-1] if action.option_strings else action.metavar) in text


def test_podracer_alone_prints_the_help_and_exits_2(capsys):
    assert cli.run([]) == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("usage: podracer ") and "podracer bench" in stderr and "podracer train" in stderr


def test_the_documented_usage_is_the_parsers_and_the_table_lists_every_command(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps usage at the terminal's width; the page at 98.
    page = open(os.path.join(ROOT, "docs", "command-line.md")).read()
    blocks = re.findall(r"^```text\n(.*?)^```$", page, re.M | re.S)
    assert cli.usage(cli.build_parser()) in blocks, (
        f"paste this into docs/command-line.md:\n{cli.usage(cli.build_parser())}"
    )
    table = re.findall(r"^\| `(podracer [a-z -]+)` \|", page, re.M)
    assert table == list(OPTIONS)


def test_overrides_are_taken_out_with_their_values_wherever_they_are():
    rest, overrides = common.split_overrides(
        ["--config.a=1", "--config.b", "2", "--workdir", "d", "--config.c", "--noprogress", "--config.d"]
    )
    assert rest == ["--workdir", "d", "--noprogress"]
    assert overrides == {"a": "1", "b": "2", "c": None, "d": None}
    args = cli.parse(["config", "show", "--config.num_envs", "64", "x.py", "--config.seed=3"])
    assert (args.config, args.overrides) == ("x.py", {"num_envs": "64", "seed": "3"})


@pytest.mark.parametrize(
    "argv, words",
    [
        (["train", "--config", "x.py", "--config.seed"], ["podracer train: error: --config.seed needs a value"]),
        (["train", "--config", "x.py", "--fast"], ["podracer train: error: unknown argument '--fast'"]),
        (["train"], ["podracer train: error:", "required: --config"]),
        (["plot", "r", "--out", "x.png", "--config.seed=1"], ["podracer plot: error: unknown argument"]),
        (["config"], ["podracer config: error:", "required"]),
        (["fly"], ["podracer: error:", "invalid choice: 'fly'", "'train'"]),
    ],
)
def test_a_malformed_command_line_is_an_error_naming_the_command_and_exit_2(capsys, argv, words):
    assert cli.run(argv) == 2
    stderr = capsys.readouterr().err
    assert all(word in stderr for word in words), stderr


def first_docstring_line(path: str) -> str:
    """The first line of a config file's docstring, from its text (each opens with one: `\"\"\"Text...`)."""
    return re.match(r'"""(.*?)(""")?$', open(path).read().splitlines()[0]).group(1).strip()


def test_configs_lists_every_config_file_with_the_first_line_of_its_docstring(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert cli.run(["configs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    paths = sorted(glob.glob(os.path.join("configs", "*.py")))
    assert len(lines) == len(paths) > 20
    for line, path in zip(lines, paths, strict=True):
        name, description = line.split(maxsplit=1)
        assert (name, description) == (path, first_docstring_line(path))


def test_configs_of_another_folder_says_which_cannot_be_read(tmp_path, capsys):
    (tmp_path / "good.py").write_text('"""Trains something.\n\nMore.\n"""\n')
    (tmp_path / "bare.py").write_text("X = 1\n")
    (tmp_path / "broken.py").write_text("def (\n")
    assert cli.run(["configs", str(tmp_path)]) == 0
    out = dict(line.split(maxsplit=1) for line in capsys.readouterr().out.splitlines())
    assert out[str(tmp_path / "good.py")] == "Trains something."
    assert out[str(tmp_path / "bare.py")] == "(no docstring)"
    assert out[str(tmp_path / "broken.py")].startswith("(cannot be read:")
    assert cli.run(["configs", str(tmp_path / "nope")]) == 2


def test_config_show_prints_the_resolved_config_and_validates_it(capsys):
    assert cli.run(["config", "show", CATCH, "--config.num_envs=64", "--config.agent.gamma", "0.9"]) == 0
    shown = json.loads(capsys.readouterr().out)
    expected = podracer.load_config(CATCH, {"num_envs": 64, "agent.gamma": 0.9})
    assert shown == json.loads(expected.to_json()) and shown["num_envs"] == 64 and shown["agent"]["gamma"] == 0.9
    # A value only validation refuses (gamma is a float either way), and a field that does not exist.
    assert cli.run(["config", "show", CATCH, "--config.agent.gamma=1.5"]) == 2
    assert capsys.readouterr().err.startswith("podracer config show: error: config.agent.gamma: must be a number")
    assert cli.run(["config", "show", CATCH, "--config.num_envz=3"]) == 2
    assert "did you mean config.num_envs" in capsys.readouterr().err
    # Another agent by name: its defaults, and the fields given beside it.
    assert cli.run(["config", "show", CATCH, "--config.agent.name=ppo", "--config.agent.num_epochs=2"]) == 0
    shown = json.loads(capsys.readouterr().out)["agent"]
    assert shown == {**podracer.defaults("ppo").agent.to_dict(), "num_epochs": 2}


def bad_workdirs(tmp_path) -> list[str]:
    (tmp_path / "file").write_text("")
    places = [str(tmp_path / "file"), str(tmp_path / "file" / "run")]
    return places + (["/proc/podracer-test/run"] if os.path.isdir("/proc/self") else [])


def test_a_workdir_that_is_a_file_or_cannot_be_created_is_exit_2_naming_it_and_leaves_nothing(tmp_path, capsys):
    for workdir in bad_workdirs(tmp_path):
        assert cli.run(["train", "--config", CATCH, "--workdir", workdir]) == 2
        stderr = capsys.readouterr().err
        assert stderr.startswith(f"podracer train: error: --workdir {workdir!r}") and stderr.count("\n") == 1
    assert os.listdir(tmp_path) == ["file"] and not os.path.exists("/proc/podracer-test")
    train_command.check_workdir(str(tmp_path / "new" / "run"))  # Can be created: accepted, and nothing is left.
    train_command.check_workdir(str(tmp_path))  # A folder: accepted.
    assert os.listdir(tmp_path) == ["file"]
    with pytest.raises(UsageError, match="is a file"):
        train_command.check_workdir(str(tmp_path / "file"))


CONFIG_FILES = [
    # (the file's text, its line at fault, Python's message)
    ("import podracer\n\ndef get_config():\n    return podracer.defaults(\n", 4, "SyntaxError: '(' was never closed"),
    (
        "import podracer\n\ndef get_config():\n    config = podracer.defaults()\n    config.num_envs = num_env\n",
        5,
        "NameError: name 'num_env' is not defined",
    ),
    ("import podracer\n\nSTEPS = 1 / 0\n", 3, "ZeroDivisionError: division by zero"),
]


@pytest.mark.parametrize("text, line, message", CONFIG_FILES)
def test_a_config_file_that_does_not_parse_or_raises_is_its_path_line_and_message(
    tmp_path, capsys, text, line, message
):
    path = tmp_path / "mine.py"
    path.write_text(text)
    with pytest.raises(ConfigFileError) as error:
        podracer.load_config(str(path))
    assert (error.value.path, error.value.line) == (str(path), line) and isinstance(error.value, ValueError)
    assert cli.run(["train", "--config", str(path), "--workdir", str(tmp_path / "run")]) == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith(f"podracer train: error: {path}, line {line}: {message}")
    assert stderr.splitlines()[1].strip() == text.splitlines()[line - 1].strip()  # The line itself.
    assert len(stderr.splitlines()) == 2 and "Traceback" not in stderr
    assert sorted(os.listdir(tmp_path)) == ["mine.py"]


# Runs command lines through `podracer.cli.run` in a fresh interpreter; prints their exit codes and whether JAX was
# imported: reading the arguments, and refusing bad ones, must not import it.
NO_JAX_PROGRAM = """
import json, sys
from podracer import cli
codes = []
for argv in json.loads(sys.argv[1]):
    try:
        codes.append(cli.run(argv))
    except SystemExit as exit:
        codes.append(exit.code)
print(json.dumps({"codes": codes, "jax": "jax" in sys.modules}))
"""


def test_help_and_bad_arguments_are_answered_without_importing_jax(tmp_path):
    (tmp_path / "file").write_text("")
    cases = [
        (["--help"], 0),
        (["train", "--help"], 0),
        (["bench", "--help"], 0),
        (["configs"], 0),
        (["bench", "--repeats", "0"], 2),
        (["train", "--config", CATCH, "--workdir", str(tmp_path / "file")], 2),
        (["plot", str(tmp_path), "--out", str(tmp_path / "x.jpeg")], 2),
    ]
    result = subprocess.run(
        [sys.executable, "-c", NO_JAX_PROGRAM, json.dumps([argv for argv, _ in cases])],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome == {"codes": [code for _, code in cases], "jax": False}


def test_the_parser_raises_instead_of_exiting():
    with pytest.raises(common.CommandLineError) as error:
        common.Parser(prog="podracer x").parse_args(["--nope"])
    assert error.value.prog == "podracer x" and isinstance(error.value, UsageError)
