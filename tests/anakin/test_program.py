"""Replication over several devices: the Anakin program on 8 forced CPU devices, in a subprocess.

An update on 8 devices, each holding 1/8 of the environments, must equal the
same update on 1 device holding them all: every random draw belongs to one
environment, and gradients are averaged over equal shards.
"""

import json

import pytest

from tests.helpers import run_module


@pytest.mark.slow  # One fresh process with 8 devices: PPO compiled for 8 devices and for 1, then actor-critic.
def test_eight_devices_make_the_same_updates_as_one_device_with_the_whole_batch():
    """PPO through `podracer.train` (one epoch, one minibatch, plain SGD, a feed-forward network), then the
    actor-critic dispatch with an LSTM core (each environment's recurrent state too): over 8 devices and over 1,
    the same run. Both checks share one process, whose start is most of a check's cost."""
    result = run_module("ppo_eight_versus_one", "lstm", num_devices=8)
    assert result.returncode == 0, result.stderr
    ppo, recurrent = (json.loads(line) for line in result.stdout.strip().splitlines()[-2:])
    assert ppo["step"] == 16 * 32 * 2 * 2
    assert ppo["episodes"] > 0
    assert ppo["changed"] > 0  # The second dispatch moved the parameters.
    assert abs(ppo["loss"]) < 1e3
    assert recurrent["episodes"] > 0
    assert recurrent["changed"] > 0  # The updates did move the parameters.
