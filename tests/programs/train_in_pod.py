"""Trains the named config as one process of a job of 2 (the PODRACER_* environment says which); prints its result.

    python -m tests.programs.train_in_pod CONFIG_NAME '{"field": value, ...}' WORKDIR

Started by `tests.helpers.start_pod`, once per process. JSON lists are read as
tuples. Prints one JSON line: this process's index, the job's device count, the
steps trained and a digest of this process's copy of the final parameters.
"""

import hashlib
import json
import sys

import jax
import numpy as np

import podracer
from tests.helpers import load_config

if __name__ == "__main__":
    name, overrides, workdir = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()}
    config = load_config(name, overrides, replicas=2)
    result = podracer.train(config, workdir=workdir or None)
    params = [np.asarray(leaf.addressable_data(0)) for leaf in jax.tree.leaves(result.learner_state.params)]
    summary = {
        "process": jax.process_index(),
        "devices": jax.device_count(),
        "steps": result.history[-1]["step"],
        "digest": hashlib.sha256(b"".join(p.tobytes() for p in params)).hexdigest(),
    }
    print(json.dumps(summary))
