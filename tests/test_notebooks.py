"""The notebooks in colab/: committed without outputs, and executed top to bottom with nbclient on CPU.

Each notebook's `parameters` cell sets its step budgets and seed; the tests add
a cell after it with smaller budgets and the learning test's seed (as papermill
would), so both run in about a minute together. A notebook ends by printing
its agent's return, which the test holds to a threshold, so a silent
regression fails here. Kernels run with this interpreter (the .venv's
ipykernel), with Jupyter's and IPython's folders of the test's own: not a
`python3` kernel, a startup script or a configuration from the user's home.
"""

import json
import os
import re
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from tests.helpers import HANG_SECONDS, ROOT

COLAB = os.path.join(ROOT, "colab")
NOTEBOOKS = ("anakin.ipynb", "sebulba.ipynb")
# Budgets for the tests; a notebook's own are for people.
TEST_PARAMETERS = {
    "anakin.ipynb": {"TOTAL_STEPS": 300_000, "CATCH_STEPS": 49_152},  # Catch: 6 updates, for the plots only.
    "sebulba.ipynb": {"TOTAL_STEPS": 60_000},
}


def read(name: str) -> nbformat.NotebookNode:
    return nbformat.read(os.path.join(COLAB, name), as_version=4)


def parameters_cell(notebook: nbformat.NotebookNode) -> int:
    (index,) = [i for i, cell in enumerate(notebook.cells) if "parameters" in cell.metadata.get("tags", [])]
    return index


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_notebooks_are_valid_and_have_their_outputs_cleared(name):
    notebook = read(name)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{name}: clear the outputs of {cell.source[:60]!r}"
            )
    assert "widgets" not in notebook.metadata


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_notebook_installs_podracer_first_and_tags_one_parameters_cell(name):
    notebook = read(name)
    setup = next(cell for cell in notebook.cells if cell.cell_type == "code")
    assert "google.colab" in setup.source and "pip" in setup.source
    index = parameters_cell(notebook)
    for field in TEST_PARAMETERS[name]:
        assert f"\n{field} = " in "\n" + notebook.cells[index].source, f"{name}: the parameters cell lacks {field}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_colab_links_open_this_notebook_from_the_repository_the_setup_clones(name):
    notebook = read(name)
    setup = next(cell for cell in notebook.cells if cell.cell_type == "code")
    (repository,) = re.findall(r"https://github.com/([\w.-]+/[\w.-]+)\"", setup.source)
    link = f"https://colab.research.google.com/github/{repository}/blob/main/colab/{name}"
    assert link in notebook.cells[0].source
    assert link in open(os.path.join(ROOT, "README.md")).read()


KERNEL = "podracer-tests"


@pytest.fixture
def jupyter_folders(tmp_path, monkeypatch):
    """Jupyter's and IPython's folders in `tmp_path`, with one kernel, KERNEL: this interpreter's ipykernel."""
    kernel = tmp_path / "data" / "kernels" / KERNEL
    kernel.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (kernel / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"}))
    for variable, folder in [
        ("JUPYTER_PATH", "data"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("IPYTHONDIR", "ipython"),
    ]:
        monkeypatch.setenv(variable, str(tmp_path / folder))
    monkeypatch.delenv("JUPYTER_CONFIG_PATH", raising=False)


LEARNED = re.compile(r"learned: mean episode return (\S+) over the last 100 episodes")


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param("anakin.ipynb", marks=pytest.mark.learning("last 100 episodes", at_least=2.0, random=-0.6)),
        pytest.param("sebulba.ipynb", marks=pytest.mark.learning("last 100 episodes", at_least=100, random=22)),
    ],
)
def test_notebook_runs_top_to_bottom_and_its_agent_learns(name, jupyter_folders, learning):
    notebook = read(name)
    parameters = {**TEST_PARAMETERS[name], "SEED": learning.seed}
    overrides = "\n".join(f"{field} = {value!r}" for field, value in parameters.items())
    notebook.cells.insert(parameters_cell(notebook) + 1, nbformat.v4.new_code_cell(overrides))
    # Every wait is for a hang only: a cell may take minutes on a busy machine, the kernel long to start, and its
    # outputs long to arrive after the cell's reply (nbclient's default is 4 s, after which it drops them).
    waits = dict(timeout=int(HANG_SECONDS), startup_timeout=int(HANG_SECONDS), iopub_timeout=int(HANG_SECONDS))
    client = NotebookClient(
        notebook, kernel_name=KERNEL, raise_on_iopub_timeout=True, resources={"metadata": {"path": COLAB}}, **waits
    )
    # As a fresh kernel would start: envpool's import sets MPLBACKEND=Agg in this process, which would hide the plots.
    env = {name: value for name, value in os.environ.items() if name != "MPLBACKEND"}
    client.execute(env=env)  # Raises CellExecutionError, with the cell and its traceback, if any cell fails.

    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    pictures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(pictures) >= (4 if name == "anakin.ipynb" else 1), "the plots were not drawn"
    learning.check(float(LEARNED.search(notebook.cells[-1].outputs[-1].get("text", "")).group(1)))
