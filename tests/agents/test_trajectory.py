"""`transitions`: the per-transition view of a trajectory every loss reads, against the NumPy reference."""

import jax
import numpy as np
import pytest

from podracer.agents import transitions
from podracer.envs import LAST
from tests.references import make_trajectory, np_transitions


@pytest.mark.parametrize("reward_clip", [0.0, 0.5])
def test_transitions_match_numpy(reward_clip):
    trajectory, gamma, lam = make_trajectory(3), 0.9, 0.7
    got = jax.jit(transitions)(trajectory, gamma, reward_clip)
    rewards, discounts, valid, lambdas = np_transitions(trajectory, gamma, lam, reward_clip)
    np.testing.assert_allclose(got.rewards, rewards, rtol=1e-6)
    np.testing.assert_allclose(got.discounts, discounts, rtol=1e-6)
    np.testing.assert_array_equal(got.valid, valid)
    np.testing.assert_allclose(got.lambdas(lam), lambdas, rtol=1e-6)
    np.testing.assert_array_equal(got.ends_episode, np.asarray(trajectory.timestep.step_type[1:] == LAST, np.float32))


def test_reward_clip_clips_only_when_positive():
    trajectory = make_trajectory(3)
    raw = np.asarray(trajectory.timestep.reward[1:])
    assert np.abs(raw).max() > 1.0  # The data have rewards to clip.
    np.testing.assert_array_equal(transitions(trajectory, 0.9).rewards, raw)
    np.testing.assert_array_equal(transitions(trajectory, 0.9, 1.0).rewards, np.clip(raw, -1.0, 1.0))
