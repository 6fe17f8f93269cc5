"""`ParameterVersions`: numbered copies of the acting parameters on every actor device, and the lag rule."""

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.sebulba.actor import policy_version
from podracer.sebulba.parameter_versions import VERSIONS_KEPT, ParameterVersions
from tests.helpers import HANG_SECONDS


def test_published_versions_are_copies_on_every_actor_device():
    devices = jax.devices()[:2]
    versions = ParameterVersions(devices)
    params = jax.device_put({"w": jnp.arange(4.0), "b": jnp.ones(())}, devices[0])
    versions.publish(0, params)
    for device in devices:
        got = versions.get(0, device, timeout=1.0)
        assert {leaf.devices().pop() for leaf in jax.tree.leaves(got)} == {device}
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(params), strict=True):
            np.testing.assert_array_equal(a, b)
    # Even on the learner's own device the copy is a new buffer, so the learner may donate its state.
    copies = versions.get(0, devices[0], timeout=1.0)
    for a, b in zip(jax.tree.leaves(copies), jax.tree.leaves(params), strict=True):
        assert a.unsafe_buffer_pointer() != b.unsafe_buffer_pointer()


def test_get_waits_for_a_version_and_times_out_without_it():
    device = jax.devices()[0]
    versions = ParameterVersions([device])
    versions.publish(0, {"w": jnp.zeros(2)})
    with pytest.raises(TimeoutError):
        versions.get(1, device, timeout=0.05)
    timer = threading.Timer(0.1, versions.publish, (1, {"w": jnp.ones(2)}))
    timer.start()
    np.testing.assert_array_equal(versions.get(1, device, timeout=HANG_SECONDS)["w"], [1.0, 1.0])
    timer.join()


def test_only_the_newest_versions_are_kept():
    device = jax.devices()[0]
    versions = ParameterVersions([device])
    for version in range(5):
        versions.publish(version, {"w": jnp.full(2, float(version))})
    for version in range(5 - VERSIONS_KEPT, 5):
        np.testing.assert_array_equal(versions.get(version, device, timeout=0.01)["w"], [version, version])
    with pytest.raises(TimeoutError):
        versions.get(5 - VERSIONS_KEPT - 1, device, timeout=0.01)


def test_rollouts_act_exactly_policy_lag_versions_behind():
    assert [policy_version(index, 0) for index in range(4)] == [0, 1, 2, 3]
    assert [policy_version(index, 1) for index in range(4)] == [0, 0, 1, 2]
    # A run resumed after 5 updates has only version 5: its first rollout cannot act one behind.
    assert [policy_version(index, 1, first_version=5) for index in range(5, 9)] == [5, 5, 6, 7]
