"""Runs many `podracer train` command lines through `podracer.cli.main` in one interpreter (JAX starts once).

    python -m tests.programs.run_cli_cases '[[[ARGS...], WORKDIR], ...]'
    python -m tests.programs.run_cli_cases --cases FILE [--forbid-compile]

Each case's ARGS follow `podracer train --config`; the cases come as JSON on
the command line, or in FILE when there are too many for one. Prints one
JSON line: for each case its exit code, its stderr, whether its workdir was
created, the seconds it took and whether it got as far as compiling a
program (`jax.stages.Lowered.compile`, the step that follows every check in
both architectures). With `--forbid-compile` a case that gets that far is
stopped there (its code is null) instead of training: bad input must be
rejected before anything is compiled.

An exception that escapes `main` is reported as the command line would show
it: exit code 1 and the traceback on stderr.
"""

import contextlib
import io
import json
import os
import sys
import time
import traceback
import warnings

import jax

from podracer.cli import main

# The cases share one interpreter, so JAX is already running when a later case sets config.cpu_threads; under
# `podracer train` it never is. The warning that the setting has no effect is this program's, not the case's.
warnings.filterwarnings("ignore", message="config.cpu_threads=", category=UserWarning)


class CompileAttempted(BaseException):  # noqa: N818 -- a signal to this program, not an error of the case.
    """Raised by `jax.stages.Lowered.compile` under --forbid-compile; a BaseException, so no handler swallows it."""


def forbid_compile() -> list[bool]:
    """Makes `Lowered.compile` record that it was called and raise `CompileAttempted`; the record is returned."""
    attempts: list[bool] = []

    def compile_forbidden(self, *args, **kwargs):
        attempts.append(True)
        raise CompileAttempted

    jax.stages.Lowered.compile = compile_forbidden
    return attempts


def run_case(args: list, workdir: str, compile_attempts: list[bool] | None = None) -> dict:
    stderr = io.StringIO()
    started = time.perf_counter()
    code = None
    with contextlib.redirect_stderr(stderr):
        try:
            main(["podracer", "train", "--config", *args, "--workdir=" + workdir])
            code = 0
        except SystemExit as exit:
            code = exit.code
        except CompileAttempted:
            pass
        except Exception:  # noqa: BLE001 -- what `python -m podracer.cli` would show: a traceback, exit code 1.
            traceback.print_exc()
            code = 1
    compiled = bool(compile_attempts)
    if compile_attempts:
        compile_attempts.clear()
    return {
        "code": code,
        "stderr": stderr.getvalue(),
        "workdir_exists": os.path.exists(workdir),
        "seconds": time.perf_counter() - started,
        "compiled": compiled,
    }


def read_cases(argv: list[str]) -> tuple[list, bool]:
    """The cases and whether compiling is forbidden, from JSON in argv[0] or from `--cases FILE [--forbid-compile]`."""
    if argv and argv[0] == "--cases":
        with open(argv[1]) as f:
            return json.load(f), "--forbid-compile" in argv[2:]
    return json.loads(argv[0]), False


if __name__ == "__main__":
    cases, forbidden = read_cases(sys.argv[1:])
    attempts = forbid_compile() if forbidden else None
    print(json.dumps([run_case(args, workdir, attempts) for args, workdir in cases]))
