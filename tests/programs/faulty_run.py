"""`podracer train` on Sebulba CartPole with a fault injected into one real function.

    python -m tests.programs.faulty_run MODULE ATTRIBUTE FROM_CALL FAULT WORKDIR [EXTRA_ARGS...]

Wraps `MODULE.ATTRIBUTE` (a function, or `Class.method`) so that from its
FROM_CALL-th call on it raises ("raise") or takes 3 s ("stall"), then runs the
CLI on configs/sebulba_cartpole_impala.py with any further arguments.
"""

import importlib
import sys
import time

from podracer.cli import main

CONFIG = "configs/sebulba_cartpole_impala.py"


def inject(module_name: str, attribute: str, from_call: int, fault: str) -> None:
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


if __name__ == "__main__":
    module_name, attribute, from_call, fault, workdir, *extra_args = sys.argv[1:]
    inject(module_name, attribute, int(from_call), fault)
    main(
        ["podracer", "train", "--config", CONFIG, "--config.total_steps=1000000", "--noprogress"]
        + ["--config.log_every_updates=1", "--workdir", workdir, *extra_args]
    )
