"""Trains a config into a workdir, pausing at each log record so a test can kill it mid-run; prints its result.

    python -m tests.programs.resumable_run CONFIG_NAME '{"field": value, ...}' WORKDIR PAUSE_SECONDS [HOLD_FROM]

Run again with the same arguments, it resumes from the workdir's newest
checkpoint (config.resume is "auto"). The pause changes nothing but timing.
With HOLD_FROM, the process waits at its HOLD_FROM-th log record (and stops
there) until it is killed, so that a test that kills it after an earlier
record never finds it already finished, however slow the test's own process
is. Prints one JSON line: this process's index, the steps trained, and a
digest of this process's copy of the whole final learner state (parameters
and optimiser state).
"""

import hashlib
import json
import sys

import jax
import numpy as np

import podracer
from tests.helpers import load_config, overrides_from_json, pause_at_records

if __name__ == "__main__":
    name, overrides, workdir, pause = sys.argv[1], overrides_from_json(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    hold_from = int(sys.argv[5]) if len(sys.argv) > 5 else None
    callbacks = [pause_at_records(pause, hold_from)]
    result = podracer.train(load_config(name, overrides), workdir=workdir, callbacks=callbacks)
    leaves = [np.asarray(leaf.addressable_data(0)) for leaf in jax.tree.leaves(result.learner_state)]
    digest = hashlib.sha256(b"".join(leaf.tobytes() for leaf in leaves)).hexdigest()
    print(json.dumps({"process": jax.process_index(), "steps": result.steps, "digest": digest}))
