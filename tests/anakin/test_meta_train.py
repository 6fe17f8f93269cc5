"""LPG meta-training (`podracer meta-train`): a short run lowers its meta-loss, and a run killed with SIGKILL and
started again ends bitwise where an uninterrupted one does (the saved rule and every record but its timings).

Two processes share the session's persistent compilation cache, so the program is compiled once: the first is
killed, the second resumes its run and then runs the uninterrupted one; the comparison is between runs compiled
with the same options.
"""

import json
import os
import signal

import numpy as np
import pytest

from tests.anakin.test_resume import logged
from tests.helpers import TINY_META_TRAINING, run_module, start_program, wait_until

TINY = {
    **TINY_META_TRAINING,
    "meta.updates": 12,
    "meta.optimizer.learning_rate": 0.01,
    # A large cost on ||pi_hat||^2, so the meta-loss falls within 12 meta-updates whatever the agents' returns.
    "meta.costs": "(0.01, 0.001, 0.1, 0.001)",
    "checkpoint.every_updates": 4,  # The kill comes after a checkpoint and a record beyond it.
    "checkpoint.every_minutes": 0,
}
TIMINGS = ("steps_per_second", "wall_seconds")


def records(workdir) -> list[dict]:
    with open(os.path.join(workdir, "metrics.jsonl")) as f:
        return [{k: v for k, v in json.loads(line).items() if k not in TIMINGS} for line in f]


@pytest.mark.slow  # Two meta-training processes, one compile.
def test_meta_training_lowers_its_meta_loss_and_resumes_bitwise_after_a_kill(tmp_path):
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    args = (json.dumps(TINY), str(killed), "0", "4")  # Held at its 4th record until killed.
    process = start_program("meta_train_run", *args, num_devices=2)
    wait_until(lambda: logged(killed, 3), "3 records", [process])
    process.send_signal(signal.SIGKILL)
    process.wait()

    both = run_module("meta_train_run", json.dumps(TINY), f"{killed}{os.pathsep}{whole}", "0", num_devices=2)
    assert both.returncode == 0, both.stderr[-3000:]
    assert "resuming from" in both.stderr
    resumed_rule, whole_rule = map(json.loads, both.stdout.strip().splitlines()[-2:])
    assert resumed_rule == whole_rule  # The rule, bit for bit.
    assert records(killed) == records(whole)
    losses = [record["meta_loss"] for record in records(whole)]
    assert np.mean(losses[-2:]) < losses[0], losses
