"""MuZero's categorical support: the transform round-trips, and the two-hot projection matches NumPy."""

import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents.models import support

VALUES = np.array([-1e4, -537.3, -10.0, -1.0, -0.25, 0.0, 0.3, 1.0, 2.5, 99.0, 500.0, 1e4], np.float32)


def np_h(x):
    """Pohlen et al. (2018), Proposition A.2."""
    return np.sign(x) * (np.sqrt(np.abs(x) + 1) - 1) + 0.001 * x


def np_two_hot(x, support_size):
    """Probability on the two integers around h(x) in -S..S, in proportion to closeness (Schrittwieser et al. 2020)."""
    y = min(max(np_h(float(x)), -support_size), support_size)
    probabilities = np.zeros(2 * support_size + 1)
    low = int(np.floor(y))
    probabilities[low + support_size] += 1 - (y - low)
    if y > low:
        probabilities[low + support_size + 1] += y - low
    return probabilities


def test_inverse_transform_undoes_the_transform_and_h_is_as_in_the_paper():
    x = jnp.asarray(VALUES)
    np.testing.assert_allclose(support.transform(x), np_h(VALUES.astype(np.float64)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(support.inverse_transform(support.transform(x)), VALUES, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        support.transform(support.inverse_transform(x / 100)), VALUES / 100, rtol=1e-4, atol=1e-5
    )


@pytest.mark.parametrize("support_size", [3, 10, 300])
def test_two_hot_projection_matches_numpy_and_its_mean_is_the_clipped_transform(support_size):
    got = np.asarray(support.to_categorical(jnp.asarray(VALUES), support_size))
    expected = np.stack([np_two_hot(v, support_size) for v in VALUES])
    np.testing.assert_allclose(got, expected, atol=1e-5)
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-6)
    bins = np.arange(-support_size, support_size + 1)
    np.testing.assert_allclose(got @ bins, np.clip(np_h(VALUES), -support_size, support_size), rtol=1e-5, atol=1e-5)


def test_the_scalar_of_a_projection_is_the_value_inside_the_support():
    support_size = 10
    inside = VALUES[np.abs(np_h(VALUES)) <= support_size]
    logits = jnp.log(support.to_categorical(jnp.asarray(inside), support_size) + 1e-30)
    np.testing.assert_allclose(support.to_scalar(logits), inside, rtol=1e-3, atol=1e-3)
    # Uniform logits: the mean of a symmetric support, 0.
    np.testing.assert_allclose(support.to_scalar(jnp.zeros((2, 21))), 0.0, atol=1e-6)
