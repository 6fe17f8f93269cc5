"""Training from a dataset on 8 devices and on 1: the same sampled batches, and the same updates.

The dataset is split over 8 devices, each holding an eighth of its rows; one
device holds them all. Each update's batch must be the same transitions,
bitwise, and K updates of BC and IQL (plain SGD: Adam's per-parameter
normalisation would blow float noise in near-zero gradients up to full
steps) must end on the same parameters up to float rounding, gradients
averaged over the 8 devices against one device's on the whole batch. Prints
a JSON summary; exits non-zero (an assertion) if they differ. Run with 8
forced CPU devices: `python -m tests.programs.offline_devices`.
"""

import json

import jax
import numpy as np
from jax.sharding import PartitionSpec

from podracer import agents, defaults
from podracer.anakin.offline_program import make_offline_dispatch, make_offline_init
from podracer.devices.topology import DEVICE_AXIS, REPLICATED, device_mesh, per_device_program
from podracer.offline import sampling
from podracer.offline.dataset import from_episodes
from tests.offline.datasets import CONTINUOUS_ACTIONS, OBSERVATION_SPEC, random_episodes

BATCH, UPDATES = 64, 3


def batches(dataset, devices) -> list:
    """Three batches sampled on `devices`, gathered to the host."""
    mesh = device_mesh(devices)
    rows = sampling.place(dataset, mesh)
    out = PartitionSpec(None, DEVICE_AXIS)  # Trajectories are time-major: the batch is their second axis.
    program = per_device_program(
        lambda rows, key: sampling.sample(rows, key, BATCH, DEVICE_AXIS),
        mesh,
        (sampling.partition_specs(rows), REPLICATED),
        out,
    )
    return [jax.device_get(jax.jit(program)(rows, jax.random.key(seed))) for seed in range(3)]


def updates(name: str, dataset, devices) -> dict:
    config = defaults(name)
    config.offline.dataset = "the dataset placed below"  # IQL, which also learns online, learns from it.
    config.network.hidden_sizes = (16,)
    config.optimizer.name, config.optimizer.learning_rate = "sgd", 0.1
    agent = agents.make(config, num_updates=UPDATES)
    mesh = device_mesh(devices)
    rows = sampling.place(dataset, mesh)
    key = jax.random.key(7)
    state = make_offline_init(lambda _: agent, (OBSERVATION_SPEC, CONTINUOUS_ACTIONS), mesh, key, {})(key, {})
    initial = jax.device_get(state.learner)
    dispatch = make_offline_dispatch(lambda _: agent, BATCH, UPDATES, mesh, rows)
    state, _ = dispatch(state, {}, np.int32(UPDATES), rows)
    learned = jax.device_get(state.learner)
    moved = max(
        float(np.max(np.abs(np.asarray(a, float) - b), initial=0))
        for a, b in zip(jax.tree.leaves(learned), jax.tree.leaves(initial), strict=True)
    )
    assert moved > 1e-3, moved  # The updates learn: equality is not that of parameters left alone.
    return learned


def main() -> dict:
    assert jax.device_count() == 8, jax.devices()
    episodes = random_episodes(60, discrete=False, max_steps=12)
    dataset = from_episodes(episodes, OBSERVATION_SPEC, CONTINUOUS_ACTIONS, {})
    for eight, one in zip(batches(dataset, jax.devices()), batches(dataset, jax.devices()[:1]), strict=True):
        for a, b in zip(jax.tree.leaves(eight), jax.tree.leaves(one), strict=True):
            np.testing.assert_array_equal(a, b)
    summary = {"rows": dataset.rows, "transitions": dataset.transitions}
    for name in ("bc", "iql"):
        eight, one = updates(name, dataset, jax.devices()), updates(name, dataset, jax.devices()[:1])
        largest = 0.0
        for a, b in zip(jax.tree.leaves(eight), jax.tree.leaves(one), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
            largest = max(largest, float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float)), initial=0.0)))
        summary[name] = largest
    return summary


if __name__ == "__main__":
    print(json.dumps(main()))
