"""`envs.episodes`: episode statistics from timesteps, the one rule host actors (numpy) and JAX wrappers share."""

import jax
import jax.numpy as jnp
import numpy as np

from podracer.envs import FIRST, LAST, MID, TimeStep, episodes


def _stream(seed, num_steps=60, batch=4):
    """Random step types that respect dm_env's order (FIRST after LAST), with rewards."""
    rng = np.random.default_rng(seed)
    step_type = np.empty((num_steps, batch), np.int32)
    step_type[0] = FIRST
    for t in range(1, num_steps):
        ends = rng.uniform(size=batch) < 0.15
        step_type[t] = np.where(step_type[t - 1] == LAST, FIRST, np.where(ends, LAST, MID))
    reward = np.where(step_type == FIRST, 0.0, rng.normal(size=(num_steps, batch))).astype(np.float32)
    return step_type, reward


def test_statistics_restart_at_first_and_report_the_finished_episode_at_last():
    step_type, reward = _stream(0)
    episode_return, episode_length = np.zeros(4), np.zeros(4, np.int64)
    expected_return, expected_length = np.zeros(4), np.zeros(4, np.int64)
    totals = np.zeros(3)
    for t in range(len(step_type)):
        timestep = TimeStep(step_type[t], reward[t], np.ones(4, np.float32), None)
        episode_return, episode_length = episodes.update(episode_return, episode_length, timestep, xp=np)
        first = step_type[t] == FIRST
        expected_return = np.where(first, 0.0, expected_return + reward[t])
        expected_length = np.where(first, 0, expected_length + 1)
        np.testing.assert_allclose(episode_return, expected_return, rtol=1e-6)
        np.testing.assert_array_equal(episode_length, expected_length)
        completed = episodes.completed(timestep, episode_return, episode_length, xp=np)
        last = step_type[t] == LAST
        assert completed.episodes == last.sum()
        np.testing.assert_allclose(completed.return_sum, expected_return[last].sum(), rtol=1e-6, atol=1e-6)
        assert completed.length_sum == expected_length[last].sum()
        totals += np.asarray(completed, np.float64)
    assert totals[0] >= 8  # Several episodes ended.


def test_numpy_and_jax_numpy_give_the_same_statistics():
    step_type, reward = _stream(1)
    discount = np.ones_like(reward)

    def run(xp, step_type, reward, discount):
        def step(carry, x):
            timestep = TimeStep(*x, None)
            carry = episodes.update(*carry, timestep, xp=xp)
            return carry, (carry, episodes.completed(timestep, *carry, xp=xp))

        if xp is jnp:
            carry = (jnp.zeros(4), jnp.zeros(4, jnp.int32))
            return jax.lax.scan(step, carry, (step_type, reward, discount))[1]
        carry, outputs = (np.zeros(4, np.float32), np.zeros(4, np.int32)), []
        for x in zip(step_type, reward, discount, strict=True):
            carry, output = step(carry, x)
            outputs.append(output)
        return jax.tree.map(lambda *xs: np.stack(xs), *outputs)

    host = run(np, step_type, reward, discount)
    device = jax.device_get(jax.jit(lambda *a: run(jnp, *a))(step_type, reward, discount))
    for a, b in zip(jax.tree.leaves(host), jax.tree.leaves(device), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
