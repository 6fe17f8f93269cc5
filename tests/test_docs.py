"""The Python examples of README.md and the docs site run, so that what they show is what the code does.

Every ```python block of a page runs: a page's blocks in order, in one namespace
(a later block uses an earlier one's names), in a fresh interpreter that sees
two CPU devices. It starts in a scratch folder, which is also its temporary
folder, where `configs/` is the repository's: examples load configs by the
paths they show, and what they write stays out of the checkout. An example
that cannot run here (a TPU launch, a GPU, a shell session) is fenced as bash
or text, never skipped. Running them trains, so that test is slow; a fast one
checks that every block compiles.
"""

import itertools
import json
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import HANG_SECONDS, ROOT, subprocess_env

REPOSITORY = pathlib.Path(ROOT)
PAGES = ["README.md", *sorted(path.relative_to(REPOSITORY).as_posix() for path in (REPOSITORY / "docs").rglob("*.md"))]

# A fence opens a line (after any indentation, inside a list item say) and closes at the same indentation.
PYTHON_BLOCK = re.compile(r"^(?P<indent>[ \t]*)```python[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)

# Runs the blocks it reads from stdin, [[page, first line, source], ...], in one namespace; a traceback names
# the page and its line.
RUNNER = """
import json, sys
namespace = {"__name__": "__main__"}
for page, line, source in json.load(sys.stdin):
    print(f"--- {page}:{line}", flush=True)
    exec(compile("\\n" * (line - 1) + source, page, "exec"), namespace)
"""


def python_blocks(page: str) -> list[tuple[int, str]]:
    """`(line of the block's first code line, code)` for every ```python block of `page`, in order."""
    text = (REPOSITORY / page).read_text()
    return [
        (text.count("\n", 0, match.start("body")) + 1, textwrap.dedent(match.group("body")))
        for match in PYTHON_BLOCK.finditer(text)
    ]


PAGES_WITH_EXAMPLES = [page for page in PAGES if python_blocks(page)]


def test_the_readme_and_the_pages_that_teach_the_api_have_python_examples():
    assert len(python_blocks("README.md")) >= 3  # Anakin, Sebulba, your own agent.
    for page in ("docs/getting-started.md", "docs/configuring.md", "docs/agents-and-environments.md"):
        assert page in PAGES_WITH_EXAMPLES


@pytest.mark.parametrize("page", PAGES)
def test_every_python_example_compiles(page):
    for line, source in python_blocks(page):
        compile("\n" * (line - 1) + source, page, "exec")


@pytest.mark.slow  # Each page's examples train for a few seconds to a minute on 2 cores.
@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES)
def test_the_python_examples_run(page, tmp_path):
    (tmp_path / "configs").symlink_to(REPOSITORY / "configs", target_is_directory=True)
    blocks = [[page, line, source] for line, source in python_blocks(page)]
    result = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(blocks),
        cwd=tmp_path,
        env=subprocess_env(num_devices=2, env={"TMPDIR": str(tmp_path)}),  # Its temporary folders too.
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert result.returncode == 0, f"{page}: an example failed\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"


def collect_marked(marker: str, text: str, *options: str) -> str:
    """`pytest --collect-only -q -m marker` in a fresh process, over the test files whose source holds `text`: what it
    prints."""
    files = sorted(
        path.relative_to(REPOSITORY).as_posix()
        for path in (REPOSITORY / "tests").rglob("test_*.py")
        if text in path.read_text()
    )
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marker]
    result = subprocess.run(
        [*command, *options, *files], cwd=REPOSITORY, capture_output=True, text=True, timeout=HANG_SECONDS
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def rows_of_testing_page(header: str) -> list[list[str]]:
    """The cells of each row of docs/testing.md's table whose header line starts with `header`."""
    lines = (REPOSITORY / "docs" / "testing.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = itertools.takewhile(lambda line: line.startswith("|"), lines[start + 2 :])
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


@pytest.mark.slow  # Collects the files that mark tests extended in a fresh pytest: about 5 s.
def test_the_table_of_tests_left_to_make_test_extended_lists_every_test_so_marked():
    """docs/testing.md's table of what `make test` leaves out: one row for each test marked `extended`, so that no
    test can leave `make test` without the page saying what proves its claim there instead."""
    output = collect_marked("extended", "pytest.mark.extended")
    marked = sorted(line for line in output.splitlines() if "::" in line)
    rows = rows_of_testing_page("| test | what `make test` runs in its place |")
    documented = sorted(test.strip("`") for test, _ in rows)
    assert len(marked) > 10 and documented == marked
    assert all(in_its_place for _, in_its_place in rows)


@pytest.mark.slow  # Collects the learning tests in a fresh pytest: about 5 s.
def test_the_learning_tests_table_has_a_row_for_every_metric_a_learning_test_declares():
    """docs/testing.md's table of learning tests: each metric's test, bound and random score as its `learning` marker
    declares them (`tests/learning.py`), so a new learning test or a changed threshold cannot be left out."""
    output = collect_marked("learning", "pytest.mark.learning(", "--learning-declared")
    declared = sorted(json.loads(line) for line in output.splitlines() if line.startswith("["))
    documented = sorted(row[:4] for row in rows_of_testing_page("| test | metric | threshold | random |"))
    assert len(declared) > 30 and documented == declared
