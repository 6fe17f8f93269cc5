"""LPG meta-training (`podracer meta-train`): a short run lowers its meta-loss, and a run killed with SIGKILL and
started again ends bitwise where an uninterrupted one does (the saved rule and every record but its timings); the
meta-gradient reaches the rule through the inner updates.

Two processes share the session's persistent compilation cache, so the program is compiled once: the first is
killed, the second resumes its run and then runs the uninterrupted one; the comparison is between runs compiled
with the same options.
"""

import json
import os
import signal

import numpy as np
import pytest

from podracer.experiment.meta_run import meta_train
from tests.anakin.test_resume import logged
from tests.helpers import TINY_META_TRAINING, load_config, run_module, start_program, wait_until

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


@pytest.mark.slow  # A small meta-training run compiled.
def test_the_meta_gradient_reaches_the_rule_through_the_inner_updates_alone(tmp_path):
    """With every cost of Eq. 4 at 0, the meta-loss is Eq. 3 alone: the updated agents' returns, which depend on the
    rule only through the K inner updates it made. Its meta-gradient is finite and not zero; were the gradient
    through the inner updates cut, it would be exactly 0 (and the meta-loss above would fall all the same)."""
    overrides = {**TINY_META_TRAINING, "meta.updates": 2, "meta.costs": "(0.0, 0.0, 0.0, 0.0)"}
    history = meta_train(load_config("anakin_lpg_gridworlds", overrides), workdir=str(tmp_path))
    norms = [record["meta_grad_norm"] for record in history]
    assert norms and np.all(np.isfinite(norms)) and min(norms) > 1e-6, norms
