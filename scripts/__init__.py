"""Command-line tools beside the package, not installed with it: benchmarks against other JAX RL code (the
`compare_*` modules and `purejaxrl_runs`, their shared runs), seed sweeps, soak and finite-check runs, the
evaluation of a meta-learned rule, and launchers of local pods and Cloud TPU slices (`launch_tpu.sh`).

Each module is run from the repository root as `python -m scripts.NAME` (e.g. `python -m scripts.seed_sweep
--help`), and they import each other as this package (`from scripts import purejaxrl_runs`). A module that starts
another in a fresh process starts it the same way (`module_command`), with the repository root on the child's
PYTHONPATH (`on_path`), so the child imports this checkout's modules wherever the parent was started from.
"""

import os
import sys
from collections.abc import Mapping

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # The repository root, which holds this package.


def module_command(module: str, *args: str) -> list[str]:
    """The command line of a fresh Python process running `module` (`scripts.NAME`) with `args`.

    `-P`: the child's working directory is not put first on its `sys.path`,
    where a folder of its own named `scripts` (as `tests/` has) would hide this
    package; the child finds it on PYTHONPATH (`on_path`).
    """
    return [sys.executable, "-P", "-m", module, *args]


def on_path(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (this process's environment by default) with the repository root first on PYTHONPATH, for a child
    started with `module_command`."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [env.get("PYTHONPATH")])])
    return env
