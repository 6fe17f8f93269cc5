"""Writes the API reference pages from the package tree at every `mkdocs build` (the `gen-files` plugin runs it).

One page for the flat public API of `podracer/__init__.py`, read from its
`_EXPORTS` table (the names `podracer` exports lazily), each name documented
where it is defined; then one page per subpackage (its docstring, its
modules, and what its `__init__.py` defines, if anything) and one per module, found by walking `podracer/`, so new or split
modules appear without editing anything here. `reference/SUMMARY.md` is the
navigation `literate-nav` reads. A public name is rendered in full only on the
public API page, and its module's page links there, so that every object has
one home and a cross-reference to it has one target.
"""

import ast
import pathlib

import griffe
import mkdocs_gen_files

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "podracer"


def exports() -> dict[str, tuple[str, str | None]]:
    """`podracer._EXPORTS`, read without importing: public name -> (module, attribute, or None for a module)."""
    for node in ast.parse((PACKAGE / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == "_EXPORTS" for target in node.targets):
            return ast.literal_eval(node.value)
    raise RuntimeError("podracer/__init__.py has no _EXPORTS table")


def defined_at(table: dict[str, tuple[str, str | None]]) -> dict[str, str]:
    """Public name -> the dotted path where its object is defined (re-exports followed to their source)."""
    package = griffe.load("podracer", search_paths=[str(ROOT)], resolve_aliases=True)
    paths = {}
    for name, (module, attribute) in table.items():
        obj = package[(module if attribute is None else f"{module}.{attribute}").removeprefix("podracer.")]
        paths[name] = obj.final_target.path if obj.is_alias else obj.path
    return paths


def modules() -> list[tuple[str, ...]]:
    """Every module and package of podracer as dotted parts, sorted (a package before its modules)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] != "__main__":
            found.append(parts[:-1] if parts[-1] == "__init__" else parts)
    return sorted(found)


def block(path: str, **options: object) -> str:
    """A mkdocstrings block for `path`, with options (a list becomes a YAML list)."""
    lines = [f"::: {path}"]
    if options:
        lines.append("    options:")
        for key, value in options.items():
            if isinstance(value, list):
                lines.append(f"      {key}:")
                lines.extend(f'        - "{item}"' for item in value)
            else:
                lines.append(f"      {key}: {value}")
    return "\n".join(lines) + "\n\n"


def defines_members(parts: tuple[str, ...]) -> bool:
    """Whether a package's `__init__.py` defines functions or classes of its own (`podracer.plot` does), which
    its page then documents, rather than only a docstring and re-exports."""
    tree = ast.parse((ROOT.joinpath(*parts) / "__init__.py").read_text())
    return any(isinstance(node, ast.FunctionDef | ast.ClassDef) for node in tree.body)


def public_api_page(table: dict[str, tuple[str, str | None]], paths: dict[str, str]) -> str:
    text = block("podracer", members="false", heading="The public API, `import podracer`")
    text += "| name | defined at |\n| --- | --- |\n"
    text += "".join(f"| `podracer.{name}` | [`{path}`][{path}] |\n" for name, path in paths.items())
    text += "\n"
    for name, path in paths.items():
        if table[name][1] is not None:  # Modules are documented on their own pages, linked from the table.
            text += block(path, heading_level=2, heading=f"podracer.{name}")
    return text


def main() -> None:
    table = exports()
    paths = defined_at(table)
    public_in: dict[str, list[tuple[str, str]]] = {}  # Module -> [(public name, attribute defined there)].
    for name, path in paths.items():
        if table[name][1] is not None:
            module, _, attribute = path.rpartition(".")
            public_in.setdefault(module, []).append((name, attribute))

    with mkdocs_gen_files.open("reference/index.md", "w") as page:
        page.write(public_api_page(table, paths))
    nav = ["* [podracer (public API)](index.md)\n"]

    everything = modules()
    for parts in everything[1:]:  # The root package is the public API page.
        dotted = ".".join(parts)
        is_package = (ROOT.joinpath(*parts) / "__init__.py").exists()
        doc = pathlib.Path(*parts[1:], "index.md") if is_package else pathlib.Path(*parts[1:-1], f"{parts[-1]}.md")
        indent = "    " * (len(parts) - 2)
        if is_package:  # A section whose first page, the package's own, is its index.
            nav.append(f"{indent}* {parts[-1]}\n{indent}    * [{dotted}]({doc.as_posix()})\n")
            children = [".".join(p) for p in everything if len(p) == len(parts) + 1 and p[: len(parts)] == parts]
            text = block(dotted) if defines_members(parts) else block(dotted, members="false")
            text += "| module |\n| --- |\n" + "".join(f"| [`{child}`][{child}] |\n" for child in children)
        else:
            nav.append(f"{indent}* [{parts[-1]}]({doc.as_posix()})\n")
            public = public_in.get(dotted, [])
            if public:
                text = block(dotted, filters=["!^_", *(f"!^{attribute}$" for _, attribute in public)])
            else:
                text = block(dotted)
            text += "".join(
                f"`{attribute}` is part of the public API: see [`podracer.{name}`][{dotted}.{attribute}].\n\n"
                for name, attribute in public
            )
        with mkdocs_gen_files.open(pathlib.Path("reference", doc), "w") as page:
            page.write(text)

    with mkdocs_gen_files.open("reference/SUMMARY.md", "w") as summary:
        summary.writelines(nav)


main()
