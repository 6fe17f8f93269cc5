"""Replication over several devices: the Anakin program on 8 forced CPU devices, in a subprocess.

An update on 8 devices, each holding 1/8 of the environments, must equal the
same update on 1 device holding them all: every random draw belongs to one
environment, and gradients are averaged over equal shards.
"""

import pytest

from tests.helpers import last_json_line, run_module


@pytest.mark.slow  # A fresh process with 8 devices compiling the update twice.
@pytest.mark.parametrize("core", ["lstm"])  # A feed-forward network over 8 devices: PPO's test below.
def test_eight_devices_make_the_same_update_as_one_device_with_the_whole_batch(core):
    result = run_module("eight_versus_one", core, num_devices=8)
    assert result.returncode == 0, result.stderr
    summary = last_json_line(result.stdout)
    assert summary["episodes"] > 0
    assert summary["changed"] > 0  # The updates did move the parameters.


@pytest.mark.slow  # 15 s: PPO compiled for 8 devices and for 1.
def test_ppo_trains_replicated_over_eight_devices_as_on_one_device_with_the_whole_batch():
    """One epoch, one minibatch, plain SGD: `podracer.train` over 8 devices and over 1 gives the same run."""
    result = run_module("ppo_eight_versus_one", num_devices=8)
    assert result.returncode == 0, result.stderr
    summary = last_json_line(result.stdout)
    assert summary["step"] == 16 * 32 * 2 * 2
    assert summary["episodes"] > 0
    assert summary["changed"] > 0  # The second dispatch moved the parameters.
    assert abs(summary["loss"]) < 1e3
