"""Runs many `podracer train` command lines through `podracer.cli.main` in one interpreter (JAX starts once).

    python -m tests.programs.run_cli_cases '[[[ARGS...], WORKDIR], ...]'

Each case's ARGS follow `podracer train --config`; prints one JSON line: for each
case its exit code, its stderr and whether its workdir was created.
"""

import contextlib
import io
import json
import os
import sys

from podracer.cli import main


def run_case(args: list, workdir: str) -> dict:
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        try:
            main(["podracer", "train", "--config", *args, "--workdir=" + workdir])
            code = 0
        except SystemExit as exit:
            code = exit.code
    return {"code": code, "stderr": stderr.getvalue(), "workdir_exists": os.path.exists(workdir)}


if __name__ == "__main__":
    print(json.dumps([run_case(args, workdir) for args, workdir in json.loads(sys.argv[1])]))
