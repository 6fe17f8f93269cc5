"""Running statistics against NumPy, over updates and devices, and their use by the network agents."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

import podracer
from podracer import agents
from podracer.agents.algorithms.network_agent import normalize
from podracer.agents.models import normalization
from podracer.agents.models.networks import NetworkParams
from podracer.devices.topology import DEVICE_AXIS, SHARDED, device_mesh
from tests.references import make_trajectory

RNG = np.random.default_rng(0)


def _batches():
    """Three batches [T, B, 3] of observations with different means and scales."""
    return [RNG.normal(loc, scale, size=(4, 6, 3)).astype(np.float32) for loc, scale in ((5, 2), (-1, 0.5), (3, 4))]


def test_updates_equal_numpy_moments_of_everything_seen():
    statistics = normalization.init(specs.Array((3,), np.float32))
    update = jax.jit(functools.partial(normalization.update, num_batch_dims=2, axis_name=None))
    batches = _batches()
    for count, batch in enumerate(batches, start=1):
        statistics = update(statistics, batch)
        seen = np.concatenate(batches[:count]).reshape(-1, 3).astype(np.float64)
        np.testing.assert_allclose(statistics.count, len(seen))
        np.testing.assert_allclose(statistics.mean, seen.mean(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(statistics.variance, seen.var(0), rtol=1e-4)


def test_masked_values_are_left_out():
    batch = _batches()[0]
    mask = (RNG.random((4, 6)) < 0.5).astype(np.float32)
    statistics = normalization.update(normalization.init(jnp.zeros(3)), batch, 2, None, mask=mask)
    kept = batch[mask == 1].astype(np.float64)
    np.testing.assert_allclose(statistics.mean, kept.mean(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(statistics.variance, kept.var(0), rtol=1e-4)


def test_a_batch_with_every_value_masked_out_changes_nothing():
    statistics = normalization.update(normalization.init(jnp.zeros(3)), _batches()[0], 2, None)
    unchanged = normalization.update(statistics, _batches()[1], 2, None, mask=jnp.zeros((4, 6)))
    for a, b in zip(jax.tree.leaves(statistics), jax.tree.leaves(unchanged), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    empty = normalization.init(jnp.zeros(3))
    still_empty = normalization.update(empty, _batches()[1], 2, None, mask=jnp.zeros((4, 6)))
    for a, b in zip(jax.tree.leaves(empty), jax.tree.leaves(still_empty), strict=True):
        np.testing.assert_array_equal(a, b)


def test_every_device_ends_with_the_statistics_of_the_whole_batch():
    """Each of 2 devices sees half the environments; both end with the moments of all of them."""
    batch = _batches()[2]
    mesh = device_mesh(jax.devices()[:2])

    def per_device(values):
        statistics = normalization.update(normalization.init(jnp.zeros(3)), values, 2, DEVICE_AXIS)
        return jax.tree.map(lambda x: x[None], statistics)  # One row per device, to compare them.

    sharded = jax.P(None, DEVICE_AXIS)
    stacked = jax.jit(jax.shard_map(per_device, mesh=mesh, in_specs=sharded, out_specs=SHARDED))(batch)
    whole = batch.reshape(-1, 3).astype(np.float64)
    for device in range(2):
        np.testing.assert_allclose(stacked.mean[device], whole.mean(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(stacked.variance[device], whole.var(0), rtol=1e-4)


def test_normalized_observations_and_scaled_rewards_follow_the_formulas():
    statistics = normalization.RunningStatistics(jnp.float32(10), jnp.array([1.0, -2.0]), jnp.array([4.0, 0.01]))
    observation = jnp.array([[3.0, -2.0], [1.0, 100.0]])
    expected = np.clip((np.asarray(observation) - [1.0, -2.0]) / np.sqrt(np.array([4.0, 0.01]) + 1e-8), -10, 10)
    np.testing.assert_allclose(normalization.normalize_observation(statistics, observation), expected, rtol=1e-5)
    returns = normalization.RunningStatistics(jnp.float32(10), jnp.float32(3.0), jnp.float32(25.0))
    np.testing.assert_allclose(normalization.scale_rewards(returns, jnp.array([5.0, -1.0])), [1.0, -0.2], rtol=1e-5)


def test_returns_to_go_match_a_numpy_loop():
    rewards, discounts = RNG.normal(size=(6, 3)), RNG.choice([0.0, 0.9], size=(6, 3))
    expected, following = np.zeros((6, 3)), np.zeros(3)
    for t in reversed(range(6)):
        following = rewards[t] + discounts[t] * following
        expected[t] = following
    got = normalization.returns_to_go(jnp.asarray(rewards, jnp.float32), jnp.asarray(discounts, jnp.float32))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_network_agents_normalize_identically_when_acting_and_learning():
    config = podracer.defaults("actor_critic")
    config.agent.normalize_observations = True
    config.agent.scale_rewards = True
    agent = agents.make(config, num_updates=1)
    trajectory = make_trajectory(0)  # Observations [T + 1, B, 4], rewards of scale 1.
    observation = trajectory.timestep.observation
    trajectory = trajectory.replace(timestep=trajectory.timestep.replace(observation=3.0 + 5.0 * observation))
    spec = specs.Array(observation.shape[2:], np.float32)
    state = jax.jit(lambda key: agent.init(key, spec, specs.DiscreteArray(3)))(jax.random.key(0))  # Eager: 3 s.
    learned, _ = jax.jit(agent.learn)(state, trajectory, jax.random.key(1))

    # The statistics now hold the trajectory's observations (all but the last timestep) and its returns.
    seen = np.asarray(trajectory.timestep.observation[:-1], np.float64).reshape(-1, spec.shape[0])
    np.testing.assert_allclose(learned.normalizers.observations.mean, seen.mean(0), rtol=1e-4, atol=1e-4)
    assert float(learned.normalizers.returns.count) > 0
    expected_normalizers, _ = jax.jit(lambda n, t: normalize(n, t, config.agent.gamma, None))(
        state.normalizers, trajectory
    )
    for a, b in zip(jax.tree.leaves(expected_normalizers), jax.tree.leaves(learned.normalizers), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)

    # Acting with the acting parameters equals the network applied to observations normalised by hand.
    acting = agent.acting_params(learned)
    raw = trajectory.timestep.observation[0]
    _, (outputs, _) = acting.step((), raw)
    bare = NetworkParams(learned.params.module, learned.params.variables)  # No statistics: applies no normalisation.
    _, (by_hand, _) = bare.step((), normalization.normalize_observation(learned.normalizers.observations, raw))
    np.testing.assert_allclose(outputs["logits"], by_hand["logits"], rtol=1e-6)
    _, (unnormalized, _) = learned.params.step((), raw)
    assert not np.allclose(outputs["logits"], unnormalized["logits"])


def test_normalization_is_off_by_default():
    state = agents.make(podracer.defaults("ppo"), num_updates=1).init(
        jax.random.key(0), specs.Array((4,), np.float32), specs.DiscreteArray(2)
    )
    assert jax.tree.leaves(state.normalizers) == []
