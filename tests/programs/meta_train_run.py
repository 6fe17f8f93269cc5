"""Meta-trains configs/anakin_lpg_gridworlds.py, small, into workdirs in turn, pausing at each record; prints each result.

    python -m tests.programs.meta_train_run '{"field": value, ...}' WORKDIR[:WORKDIR...] PAUSE_SECONDS [HOLD_FROM]

Run again with the same arguments, it resumes from each workdir's newest
checkpoint. Several workdirs (joined by `os.pathsep`) are meta-trained one
after another in this one process, which saves a process's start. HOLD_FROM
as in tests/programs/resumable_run.py. Prints one JSON line per workdir: the
meta-updates done and a digest of the saved rule (WORKDIR/rule).
"""

import hashlib
import json
import os
import sys

import jax
import numpy as np

from podracer.agents.meta.rule_checkpoint import load_rule
from podracer.config.loading import load
from podracer.experiment.meta_run import meta_train
from tests.helpers import ROOT, overrides_from_json, pause_at_records

if __name__ == "__main__":
    overrides, workdirs, pause = overrides_from_json(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    hold_from = int(sys.argv[4]) if len(sys.argv) > 4 else None
    config = load(os.path.join(ROOT, "configs", "anakin_lpg_gridworlds.py"), overrides)
    for workdir in workdirs.split(os.pathsep):
        history = meta_train(config, workdir=workdir, callbacks=[pause_at_records(pause, hold_from)])
        params, _ = load_rule(os.path.join(workdir, "rule"))
        digest = hashlib.sha256(b"".join(np.asarray(x).tobytes() for x in jax.tree.leaves(params))).hexdigest()
        print(json.dumps({"meta_update": history[-1]["meta_update"], "digest": digest}), flush=True)
