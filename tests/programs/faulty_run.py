"""`podracer train` on Sebulba CartPole with a fault injected into one real function, case after case.

    python -m tests.programs.faulty_run '[[MODULE, ATTRIBUTE, FROM_CALL, FAULT, WORKDIR, [EXTRA_ARGS...]], ...]'

For each case it wraps `MODULE.ATTRIBUTE` (a function, or `Class.method`) so
that from its FROM_CALL-th call on it raises ("raise") or takes 3 s ("stall"),
then runs the CLI on configs/sebulba_cartpole_impala.py with the case's further
arguments, and unwraps it. Every case but the last is run as
`python -m podracer.cli` would report it (exit code, and the traceback of an
exception that escapes), printed as one JSON line; the last case runs as the
command line itself: its error ends this process, with its exit status and its
traceback on stderr. JAX starts once for all the cases; a thread an earlier
failed run left behind would keep this process from exiting.
"""

import contextlib
import importlib
import io
import json
import sys
import time
import traceback

from podracer.cli import main

CONFIG = "configs/sebulba_cartpole_impala.py"


def inject(module_name: str, attribute: str, from_call: int, fault: str):
    """Wraps the function; returns what undoes the wrapping."""
    owner_name, _, method = attribute.partition(".")
    module = importlib.import_module(module_name)
    owner = getattr(module, owner_name) if method else module
    real = getattr(owner, method or owner_name)
    calls = [0]

    def faulty(*args, **kwargs):
        calls[0] += 1
        if calls[0] >= from_call:
            if fault == "raise":
                raise RuntimeError("injected failure in " + attribute)
            time.sleep(3)
        return real(*args, **kwargs)

    setattr(owner, method or owner_name, faulty)
    return lambda: setattr(owner, method or owner_name, real)


def train(workdir: str, extra_args) -> None:
    main(
        ["podracer", "train", "--config", CONFIG, "--config.total_steps=1000000", "--noprogress"]
        + ["--config.log_every_updates=1", "--workdir", workdir, *extra_args]
    )


def reported(workdir: str, extra_args) -> dict:
    """One case as the command line reports it: its exit code and stderr."""
    stderr, code = io.StringIO(), None
    with contextlib.redirect_stderr(stderr):
        try:
            train(workdir, extra_args)
            code = 0
        except SystemExit as exit:
            code = exit.code
        except Exception:  # noqa: BLE001 -- what `python -m podracer.cli` shows: the traceback, exit code 1.
            traceback.print_exc()
            code = 1
    return {"code": code, "stderr": stderr.getvalue()}


if __name__ == "__main__":
    *earlier, last = json.loads(sys.argv[1])
    for module_name, attribute, from_call, fault, workdir, extra_args in earlier:
        undo = inject(module_name, attribute, int(from_call), fault)
        print(json.dumps(reported(workdir, extra_args)), flush=True)
        undo()
    module_name, attribute, from_call, fault, workdir, extra_args = last
    inject(module_name, attribute, int(from_call), fault)
    train(workdir, extra_args)
