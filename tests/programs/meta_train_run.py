"""Meta-trains configs/anakin_lpg_gridworlds.py, small, into a workdir, pausing at each record; prints its result.

    python -m tests.programs.meta_train_run '{"field": value, ...}' WORKDIR PAUSE_SECONDS [HOLD_FROM]

Run again with the same arguments, it resumes from the workdir's newest
checkpoint. HOLD_FROM as in tests/programs/resumable_run.py. Prints one JSON
line: the meta-updates done and a digest of the saved rule (WORKDIR/rule).
"""

import hashlib
import json
import os
import sys

import jax
import numpy as np

from podracer.agents.rule_checkpoint import load_rule
from podracer.config.loading import load
from podracer.experiment.meta_run import meta_train
from tests.helpers import ROOT, overrides_from_json, pause_at_records

if __name__ == "__main__":
    overrides, workdir, pause = overrides_from_json(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    hold_from = int(sys.argv[4]) if len(sys.argv) > 4 else None
    config = load(os.path.join(ROOT, "configs", "anakin_lpg_gridworlds.py"), overrides)
    history = meta_train(config, workdir=workdir, callbacks=[pause_at_records(pause, hold_from)])
    params, _ = load_rule(os.path.join(workdir, "rule"))
    digest = hashlib.sha256(b"".join(np.asarray(x).tobytes() for x in jax.tree.leaves(params))).hexdigest()
    print(json.dumps({"meta_update": history[-1]["meta_update"], "digest": digest}))
