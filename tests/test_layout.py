"""podracer's layout: layers whose imports point down, no import cycles, short modules and short functions.

The package is a stack of layers, each a folder with one role (see each
subpackage's docstring); a module may import from its own folder and from the
layers below it, never from above, and two folders of one layer (the two
architectures) do not import each other. The imports are read from the
source, imports inside functions included, so a lazy import cannot hide an
upward one. Modules stay under 300 lines and functions under 60, so that
each can be read whole; a folder holds at most 15 modules, where it splits
into folders by role, and no two modules (or a module and a folder) share a
name, so a name says which one is meant.
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "podracer"

MAX_MODULE_LINES = 300
MAX_FUNCTION_LINES = 60  # From `def` to its last line, the docstring included.
MAX_FOLDER_MODULES = 15  # Beside the folder's own __init__.py.

# Bottom to top. A name is a subpackage, or a module at the package root; "podracer" is the root's __init__.
LAYERS = (
    ("config",),
    ("devices",),
    ("envs",),
    ("agents",),
    ("run",),
    ("offline",),
    ("anakin", "sebulba"),
    ("experiment",),
    ("plot",),
    ("bench", "tuning"),
    ("cli",),
    ("podracer",),
)


def module_names(package: pathlib.Path) -> dict[str, pathlib.Path]:
    """`{dotted module name: file}` for every module of the package (a package by its `__init__`)."""
    names = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imported_modules(module: str, path: pathlib.Path, known: set[str]) -> set[str]:
    """The package's modules that `module` imports, anywhere in its file.

    `from a.b import c` imports `a.b.c` where that is a module, else `a.b`.
    """
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # Relative: resolved against this module's package.
                anchor = module.split(".")[: len(module.split(".")) - node.level + is_package]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in known else base)
    return {name for name in found if name in known and name != module}


def import_graph(package: pathlib.Path) -> dict[str, set[str]]:
    names = module_names(package)
    return {module: imported_modules(module, path, set(names)) for module, path in names.items()}


def component(module: str) -> str:
    """The layer entry a module belongs to: its top folder (or root module), or "podracer" for the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layering_violations(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    """Every import that points up, sideways between two folders of one layer, or into no layer."""
    level = {name: index for index, layer in enumerate(layers) for name in layer}
    problems = []
    for module, targets in sorted(graph.items()):
        source = component(module)
        if source not in level:
            problems.append(f"{module} belongs to no layer: add {source!r} to LAYERS")
            continue
        for target in sorted(targets):
            into = component(target)
            if into == source:
                continue
            if into not in level:
                problems.append(f"{module} imports {target}, which belongs to no layer")
            elif level[into] > level[source]:
                problems.append(f"{module} imports {target}: upward, from {source} into {into}")
            elif level[into] == level[source]:
                problems.append(f"{module} imports {target}: sideways, between {source} and {into}")
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of `graph`: its strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_import_points_down_the_layers():
    assert layering_violations(import_graph(PACKAGE)) == []


def test_no_module_imports_itself_back():
    assert cycles(import_graph(PACKAGE)) == []


def test_every_folder_is_in_a_layer_and_says_what_it_holds():
    graph = import_graph(PACKAGE)
    components = {component(module) for module in graph}
    assert components == {name for layer in LAYERS for name in layer}
    for init in PACKAGE.rglob("__init__.py"):
        docstring = ast.get_docstring(ast.parse(init.read_text()))
        assert docstring and len(docstring.splitlines()) >= 3, f"{init} says what lives there"


def test_no_folder_holds_more_modules_than_a_reader_can_scan():
    crowded = {
        str(folder.parent): n
        for folder in PACKAGE.rglob("__init__.py")
        if (n := len([path for path in folder.parent.glob("*.py") if path.name != "__init__.py"])) > MAX_FOLDER_MODULES
    }
    assert crowded == {}, f"split these into folders by role: {crowded}"


def test_no_two_modules_share_a_name():
    places: dict[str, list[str]] = {}
    for module in module_names(PACKAGE):
        places.setdefault(module.rsplit(".", 1)[-1], []).append(module)
    assert {name: found for name, found in places.items() if len(found) > 1} == {}


@pytest.mark.parametrize(
    "graph, expected",
    [
        ({"podracer.config.a": {"podracer.agents.b"}, "podracer.agents.b": set()}, "upward, from config into agents"),
        ({"podracer.anakin.a": {"podracer.sebulba.b"}, "podracer.sebulba.b": set()}, "sideways"),
        ({"podracer.extra.a": set()}, "belongs to no layer"),
    ],
)
def test_the_layering_check_reports_a_bad_import(graph, expected):
    (problem,) = layering_violations(graph)
    assert expected in problem


def test_the_cycle_check_finds_a_cycle_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_inside_functions_and_relative_imports_are_read(tmp_path):
    package = tmp_path / "podracer"
    (package / "config").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "config" / "__init__.py").write_text("")
    (package / "config" / "a.py").write_text("def f():\n    from podracer.bench import b\n")
    (package / "config" / "c.py").write_text("from . import a\n")
    (package / "bench").mkdir()
    (package / "bench" / "__init__.py").write_text("")
    (package / "bench" / "b.py").write_text("")
    graph = import_graph(package)
    assert graph["podracer.config.a"] == {"podracer.bench.b"}
    assert graph["podracer.config.c"] == {"podracer.config.a"}


def test_no_module_is_longer_than_a_reading():
    long = {
        str(path): n for path in PACKAGE.rglob("*.py") if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these by responsibility: {long}"


def test_no_function_is_longer_than_a_screen():
    long = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if (lines := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                    long[f"{path}:{node.name}"] = lines
    assert long == {}, f"split these into named steps: {long}"


def test_the_code_layout_page_names_every_folder_of_the_package():
    """docs/code-layout.md describes each folder: a new one cannot be left out of it."""
    page = (PACKAGE.parent / "docs" / "code-layout.md").read_text()
    folders = {".".join(init.parent.relative_to(PACKAGE.parent).parts) for init in PACKAGE.rglob("__init__.py")} - {
        "podracer"
    }
    unnamed = sorted(folder for folder in folders if f"][{folder}]" not in page)
    assert unnamed == [], f"describe these folders in docs/code-layout.md, linked as [`NAME`][NAME]: {unnamed}"


def test_the_code_layout_page_names_every_script():
    page = (PACKAGE.parent / "docs" / "code-layout.md").read_text()
    scripts = [path for path in (PACKAGE.parent / "scripts").iterdir() if path.suffix in (".py", ".sh")]
    names = {path.stem if path.suffix == ".py" else path.name for path in scripts} - {"__init__"}
    assert sorted(name for name in names if f"`{name}`" not in page) == []
