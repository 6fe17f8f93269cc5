"""Trains the named config as one process of a job of 2 (the PODRACER_* environment says which) into workdirs in
turn; prints each result.

    python -m tests.programs.train_in_pod CONFIG_NAME '{"field": value, ...}' WORKDIR[:...] [PAUSE_SECONDS [HOLD_FROM]]

Started by `tests.helpers.start_pod`, once per process. JSON lists are read as
tuples. Several workdirs (joined by `os.pathsep`) are trained one after
another in these processes, which saves the pod's start. With PAUSE_SECONDS,
each process sleeps that long at every log record (timing only), which leaves
a test room to kill the pod mid-run; with HOLD_FROM it waits at its
HOLD_FROM-th record until killed (see `tests.helpers.pause_at_records`).
Prints one JSON line per workdir: this process's index, the job's device
count, the steps trained and a digest of this process's copy of the final
parameters.
"""

import hashlib
import json
import os
import sys

import jax
import numpy as np

import podracer
from tests.helpers import load_config, overrides_from_json, pause_at_records

if __name__ == "__main__":
    name, overrides, workdirs = sys.argv[1], overrides_from_json(sys.argv[2]), sys.argv[3]
    pause = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    hold_from = int(sys.argv[5]) if len(sys.argv) > 5 else None
    config = load_config(name, overrides, replicas=2)
    for workdir in workdirs.split(os.pathsep):
        callbacks = [pause_at_records(pause, hold_from)] if pause or hold_from else []
        result = podracer.train(config, workdir=workdir or None, callbacks=callbacks)
        params = [np.asarray(leaf.addressable_data(0)) for leaf in jax.tree.leaves(result.learner_state.params)]
        summary = {
            "process": jax.process_index(),
            "devices": jax.device_count(),
            "steps": result.history[-1]["step"],
            "digest": hashlib.sha256(b"".join(p.tobytes() for p in params)).hexdigest(),
        }
        print(json.dumps(summary), flush=True)
