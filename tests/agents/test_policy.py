"""The policy heads against SciPy/NumPy: log-probabilities, entropies and sample moments."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents.models import policy
from tests.references import np_log_softmax

RNG = np.random.default_rng(0)


def _gaussian(batch=(4, 3), dims=2):
    mean = RNG.normal(size=batch + (dims,)).astype(np.float32)
    log_std = RNG.normal(scale=0.5, size=batch + (dims,)).astype(np.float32)
    return {"mean": jnp.asarray(mean), "log_std": jnp.asarray(log_std)}


def test_gaussian_log_prob_and_entropy_match_scipy():
    from scipy import stats  # Here: SciPy's import costs every test process a second or more at collection.

    outputs = _gaussian()
    action = RNG.normal(scale=2.0, size=(4, 3, 2)).astype(np.float32)
    mean, std = np.asarray(outputs["mean"], np.float64), np.exp(np.asarray(outputs["log_std"], np.float64))
    expected_log_prob = stats.norm.logpdf(action, mean, std).sum(-1)
    expected_entropy = stats.norm.entropy(mean, std).sum(-1)
    np.testing.assert_allclose(policy.log_prob(outputs, jnp.asarray(action)), expected_log_prob, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(policy.entropy(outputs), expected_entropy, rtol=1e-5, atol=1e-5)
    # A diagonal Gaussian is a multivariate normal with a diagonal covariance.
    one = stats.multivariate_normal(mean[0, 0], np.diag(std[0, 0] ** 2))
    np.testing.assert_allclose(policy.log_prob(outputs, jnp.asarray(action))[0, 0], one.logpdf(action[0, 0]), rtol=1e-5)


def test_categorical_log_prob_and_entropy_match_numpy():
    logits = RNG.normal(size=(5, 4)).astype(np.float32)
    action = RNG.integers(0, 4, size=5)
    log_probs = np_log_softmax(logits.astype(np.float64))
    outputs = {"logits": jnp.asarray(logits)}
    np.testing.assert_allclose(
        policy.log_prob(outputs, jnp.asarray(action)), log_probs[np.arange(5), action], rtol=1e-5
    )
    np.testing.assert_allclose(policy.entropy(outputs), -(np.exp(log_probs) * log_probs).sum(-1), rtol=1e-5)


def test_gaussian_samples_have_the_head_moments_and_are_not_clipped():
    n = 20_000
    outputs = {
        "mean": jnp.full((n, 2), jnp.array([0.9, -3.0])),
        "log_std": jnp.full((n, 2), jnp.log(jnp.array([0.5, 2.0]))),
    }
    samples = np.asarray(jax.jit(policy.sample)(jax.random.split(jax.random.key(1), n), outputs))
    assert samples.shape == (n, 2) and samples.dtype == np.float32
    np.testing.assert_allclose(samples.mean(0), [0.9, -3.0], atol=0.05)
    np.testing.assert_allclose(samples.std(0), [0.5, 2.0], rtol=0.03)
    assert (samples[:, 0] > 1.0).mean() > 0.3  # Beyond a [-1, 1] bound: clipping is the environment's side.


def test_categorical_samples_follow_the_probabilities():
    n = 20_000
    probabilities = np.array([0.1, 0.6, 0.3])
    outputs = {"logits": jnp.log(jnp.tile(probabilities, (n, 1)))}
    samples = np.asarray(policy.sample(jax.random.split(jax.random.key(2), n), outputs))
    assert samples.dtype == np.int32
    np.testing.assert_allclose(np.bincount(samples, minlength=3) / n, probabilities, atol=0.015)


def test_unknown_outputs_are_refused():
    with pytest.raises(ValueError, match="policy outputs must have keys"):
        policy.entropy({"mean": jnp.zeros(2)})


def test_the_mode_is_the_argmax_of_the_logits_or_the_gaussians_mean():
    logits = jnp.array([[0.1, 2.0, -1.0], [3.0, 0.0, 2.9]])
    key = jax.random.split(jax.random.key(0), 2)
    np.testing.assert_array_equal(policy.mode(key, {"logits": logits}), [1, 0])
    masked = policy.mask_illegal(logits, jnp.array([[True, False, True], [False, True, True]]))
    np.testing.assert_array_equal(policy.mode(key, {"logits": masked}), [0, 2])
    mean = jnp.array([[0.5, -2.0], [1.5, 0.0]])
    np.testing.assert_array_equal(policy.mode(key, {"mean": mean, "log_std": jnp.zeros(2)}), mean)
