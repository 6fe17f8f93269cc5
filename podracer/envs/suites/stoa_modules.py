"""stoa's modules, imported without the suites podracer does not use.

`import stoa` (and so any `stoa.X`) runs stoa's `__init__`, which imports the
adapter of every suite that is installed: Brax with MuJoCo's MJX and Warp,
MuJoCo Playground, Navix, gymnax, Pgx... That is about 7 s of imports on a
2-core machine before a Jumanji, XLand-MiniGrid or Navix run can start, for
suites it never touches. `stoa_module` imports stoa with those adapters held
back (stoa's `__init__` skips an adapter whose import fails), then the module
asked for, so each run imports the one suite it uses. The adapters stay
importable by name afterwards, here and in the user's own code.
"""

import importlib
import sys
from types import ModuleType

ADAPTERS = ("brax", "gymnax", "jumanji", "kinetix", "navix", "pgx", "playground", "xminigrid")


def stoa_module(name: str) -> ModuleType:
    """`stoa.NAME` (`"spaces"`, `"env_adapters.jumanji"`, ...), importing stoa's `__init__` without its adapters."""
    if "stoa" not in sys.modules:
        held_back = [f"stoa.env_adapters.{adapter}" for adapter in ADAPTERS]
        held_back = [module for module in held_back if module not in sys.modules]
        for module in held_back:
            sys.modules[module] = None  # Importing it raises ImportError, which stoa's `__init__` catches.
        try:
            importlib.import_module("stoa")
        finally:
            for module in held_back:
                if sys.modules.get(module, ...) is None:
                    del sys.modules[module]
    return importlib.import_module(f"stoa.{name}")
