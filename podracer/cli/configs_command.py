"""`podracer configs` lists the config files with what each trains; `podracer config show` prints one resolved.

A config file's description is the first line of its module docstring, read
without running the file. `config show` loads a file with its overrides as
`podracer train` does, validates it as `podracer.validate_config` does (the
checks that need no device), and prints it as JSON, the `config.json` a run
of it would write; a bad override or value is the same exit-2 error as
`podracer train`'s.
"""

import argparse
import ast
import glob
import os

from podracer.cli.common import Commands, add_command, add_overrides, report

# The config files that come with podracer's source, beside the package.
SHIPPED = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "configs")


def register(commands: Commands) -> None:
    """Adds `podracer configs` and `podracer config show`."""
    listing = add_command(
        commands, "configs", list_configs, "list the config files, each with the first line of its docstring"
    )
    listing.add_argument("folder", nargs="?", metavar="DIR", help="a folder of config files (default: configs/)")
    config = commands.add_parser(
        "config", help="inspect a config file (config show)", description="Inspect a config file.", allow_abbrev=False
    )
    actions = config.add_subparsers(title="commands", metavar="COMMAND", required=True)
    show = add_command(
        actions,
        "show",
        show_config,
        "print a config file's resolved and validated fields as JSON",
        "Print the config file's fields, with the overrides applied and validated as podracer train validates "
        "them before touching a device, as JSON: the config.json a run of it writes.",
    )
    show.add_argument("config", metavar="CONFIG_FILE", help="the experiment, e.g. configs/anakin_catch.py")
    add_overrides(show)


def list_configs(args: argparse.Namespace) -> int:
    """Prints each config file of `args.folder` (podracer's configs/ by default) and its description."""
    folder = args.folder or SHIPPED
    if not os.path.isdir(folder):
        return report(args.prog, f"{folder!r} is not a folder; pass the folder of your config files")
    paths = sorted(glob.glob(os.path.join(folder, "*.py")))
    if not paths:
        return report(args.prog, f"{folder!r} holds no config files (*.py)")
    shown = [_shown(path) for path in paths]
    width = max(len(name) for name in shown)
    for name, path in zip(shown, paths, strict=True):
        print(f"{name:<{width}}  {description(path)}")
    return 0


def description(path: str) -> str:
    """The first line of the config file `path`'s module docstring, read without running it."""
    try:
        with open(path, encoding="utf-8") as f:
            docstring = ast.get_docstring(ast.parse(f.read(), path))
    except (OSError, SyntaxError, ValueError) as error:  # A UnicodeDecodeError is a ValueError.
        return f"(cannot be read: {error})"
    return docstring.strip().splitlines()[0] if docstring and docstring.strip() else "(no docstring)"


def show_config(args: argparse.Namespace) -> int:
    """Prints the config file `args.config` with `args.overrides`, validated, as JSON."""
    from podracer.experiment import meta_train, schema  # Imports JAX: only once the arguments are known to be good.

    try:
        config = schema.load_config(args.config, args.overrides)
        (meta_train.validate if "meta" in config else schema.validate)(config)
    except (ValueError, OSError) as error:  # ConfigError and ConfigFileError included.
        return report(args.prog, error)
    print(config.to_json(indent=2))
    return 0


def _shown(path: str) -> str:
    """`path` relative to the working directory, ready for --config, unless that climbs out of it."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative
