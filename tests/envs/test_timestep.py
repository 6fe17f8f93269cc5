"""`timestep.from_flags`: the one rule for step types and discounts, the same with numpy (host) and jax.numpy."""

import itertools

import numpy as np

from podracer.envs import FIRST, LAST, MID, from_flags
from podracer.envs import timestep as ts


def test_host_rule_follows_timestep_transition_and_restart():
    """The numpy rule equals `timestep.transition` (and `restart` where first), which JAX environments use."""
    combos = np.array(list(itertools.product([False, True], repeat=3)))
    terminated, truncated, first = combos.T
    reward = np.arange(len(combos), dtype=np.float32) + 1
    host = from_flags(np.zeros(len(combos)), reward, terminated, truncated, first, xp=np)
    assert isinstance(host.step_type, np.ndarray) and host.step_type.dtype == np.int32
    assert host.reward.dtype == np.float32 and host.discount.dtype == np.float32
    for i in range(len(combos)):
        if first[i]:
            expected = ts.restart(0.0)
        else:
            expected = ts.transition(0.0, reward[i], terminated[i], truncated[i])
        assert host.step_type[i] == int(expected.step_type)
        assert host.reward[i] == float(expected.reward)
        assert host.discount[i] == float(expected.discount)


def test_step_types_and_discounts():
    terminated = np.array([False, True, False, True, True])
    truncated = np.array([False, False, True, True, False])
    first = np.array([False, False, False, False, True])
    timestep = from_flags(None, np.full(5, 2.0), terminated, truncated, first, xp=np)
    np.testing.assert_array_equal(timestep.step_type, [MID, LAST, LAST, LAST, FIRST])
    # Termination wins over truncation; FIRST ignores the flags: reward 0, discount 1.
    np.testing.assert_array_equal(timestep.discount, [1.0, 0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(timestep.reward, [2.0, 2.0, 2.0, 2.0, 0.0])
    np.testing.assert_array_equal(timestep.first(), first)
    np.testing.assert_array_equal(timestep.last(), [False, True, True, True, False])
