"""Replication over several devices: the Anakin program on 8 forced CPU devices, in a subprocess.

An update on 8 devices, each holding 1/8 of the environments, must equal the
same update on 1 device holding them all: every random draw belongs to one
environment, and gradients are averaged over equal shards.
"""

import pytest

from tests.helpers import last_json_line, run_module


@pytest.mark.slow  # One fresh process with 8 devices: MAPPO with GRUs compiled for 8 devices and for 1.
@pytest.mark.default_compile(llvm_optimised=False)  # The same MPE trajectories bitwise with XLA's own emitters.
def test_eight_devices_make_the_same_updates_as_one_device_with_the_whole_batch():
    """MAPPO on MPE simple_spread (one epoch, one minibatch, plain SGD), a network per agent vmapped over the
    agents inside the replicated update and a GRU per head, over 8 devices and over 1: the same trajectories,
    episodes, recurrent states (one per agent of each environment), metrics and parameters
    (`tests/programs/eight_versus_one.py`).

    One program covers PPO's advantages normalised with statistics pooled over the devices, each environment's
    recurrent state wherever it ran, and the multi-agent lifting (a single-agent PPO with an LSTM core was the
    program before; LSTM states are resumed bitwise in `test_resume.py`)."""
    result = run_module("eight_versus_one", "gru", "mappo", num_devices=8)
    assert result.returncode == 0, result.stderr
    summary = last_json_line(result.stdout)
    assert summary["episodes"] > 0
    assert summary["changed"] > 0  # The updates did move the parameters.
    assert summary["loss"] < 1e3


@pytest.mark.slow  # One fresh process with 8 devices: 20 s alone at -O0, 50 s as compiled here under load.
@pytest.mark.default_compile(llvm_optimised=False)  # The same CartPole trajectories bitwise with XLA's own emitters.
def test_vmpo_on_eight_devices_makes_the_same_updates_as_on_one():
    """V-MPO on CartPole over 8 devices and over 1: its top half of advantages is selected over every device's
    shard together, its losses are means over equal shards, and its duals (learned by Adam) and target network
    (copied after every update) stay replicated, so trajectories, metrics and parameters agree."""
    result = run_module("eight_versus_one", "none", "vmpo", num_devices=8)
    assert result.returncode == 0, result.stderr
    summary = last_json_line(result.stdout)
    assert summary["episodes"] > 0
    assert summary["changed"] > 0


@pytest.mark.slow  # One fresh process with 8 devices: about 40 s of CPU on the 2-core machine.
@pytest.mark.default_compile(llvm_optimised=False)  # The same MPE trajectories bitwise with XLA's own emitters.
def test_pqn_vdn_on_eight_devices_makes_the_same_updates_as_on_one():
    """PQN-VDN on MPE simple_spread over 8 devices and over 1: each device's team targets come from its own
    environments, its loss on the agents' summed Q-values is a mean over an equal shard, and the gradients are
    averaged, so trajectories, metrics and parameters agree."""
    result = run_module("eight_versus_one", "none", "pqn_vdn", num_devices=8)
    assert result.returncode == 0, result.stderr
    summary = last_json_line(result.stdout)
    assert summary["episodes"] > 0
    assert summary["changed"] > 0
