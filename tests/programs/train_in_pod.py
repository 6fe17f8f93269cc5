"""Trains the named config as one process of a job of 2 (the PODRACER_* environment says which); prints its result.

    python -m tests.programs.train_in_pod CONFIG_NAME '{"field": value, ...}' WORKDIR [PAUSE_SECONDS]

Started by `tests.helpers.start_pod`, once per process. JSON lists are read as
tuples. With PAUSE_SECONDS, each process sleeps that long at every log record
(timing only), which leaves a test room to kill the pod mid-run. Prints one
JSON line: this process's index, the job's device count, the steps trained and
a digest of this process's copy of the final parameters.
"""

import hashlib
import json
import sys
import time

import jax
import numpy as np

import podracer
from tests.helpers import load_config

if __name__ == "__main__":
    name, overrides, workdir = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    pause = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()}
    config = load_config(name, overrides, replicas=2)
    callbacks = [lambda event: time.sleep(pause)] if pause else []
    result = podracer.train(config, workdir=workdir or None, callbacks=callbacks)
    params = [np.asarray(leaf.addressable_data(0)) for leaf in jax.tree.leaves(result.learner_state.params)]
    summary = {
        "process": jax.process_index(),
        "devices": jax.device_count(),
        "steps": result.history[-1]["step"],
        "digest": hashlib.sha256(b"".join(p.tobytes() for p in params)).hexdigest(),
    }
    print(json.dumps(summary))
