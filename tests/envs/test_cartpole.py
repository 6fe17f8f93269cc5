"""CartPole against gymnasium's CartPole-v1, step by step."""

import math

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np

from podracer.envs import FIRST, LAST, MID, CartPole, make, wrap_for_training
from podracer.envs.cartpole import CartPoleState

X_THRESHOLD = 2.4
THETA_THRESHOLD = 12 * 2 * math.pi / 360
TOL = dict(rtol=1e-5, atol=1e-5)  # float32 here, float64 in gymnasium.

ENV = CartPole()
STEP = jax.jit(ENV.step)
RESET = jax.jit(ENV.reset)


def to_jax(state: np.ndarray, steps: int = 0) -> CartPoleState:
    x, x_dot, theta, theta_dot = np.asarray(state, np.float32)
    return CartPoleState(x, x_dot, theta, theta_dot, np.int32(steps))


def clear_of_thresholds(state: np.ndarray, margin: float = 1e-5) -> bool:
    """Whether float32 rounding cannot flip the termination test on this (gymnasium) state."""
    return abs(abs(state[0]) - X_THRESHOLD) > margin and abs(abs(state[2]) - THETA_THRESHOLD) > margin


def sample_states(rng: np.random.Generator, n: int) -> np.ndarray:
    """Half spread over the non-terminal box, half just inside its edges; float32 values."""
    high = np.array([X_THRESHOLD, 3.0, THETA_THRESHOLD, 3.5])
    box = rng.uniform(-high, high, (n // 2, 4))
    edge = rng.uniform(-high, high, (n - n // 2, 4))
    near_x = rng.random(len(edge)) < 0.5
    edge[:, 0] = np.where(near_x, np.sign(edge[:, 0]) * rng.uniform(2.3, X_THRESHOLD, len(edge)), edge[:, 0])
    edge[:, 2] = np.sign(edge[:, 2]) * rng.uniform(0.18, THETA_THRESHOLD, len(edge))
    return np.concatenate([box, edge]).astype(np.float32)


def test_one_step_matches_gymnasium_from_random_states():
    gym_env = gymnasium.make("CartPole-v1").unwrapped
    gym_env.reset(seed=0)
    states = sample_states(np.random.default_rng(0), 200)
    terminations = []
    for action in (0, 1):
        batch = CartPoleState(*jnp.asarray(states.T), jnp.zeros(len(states), jnp.int32))
        _, timesteps = jax.jit(jax.vmap(ENV.step, (0, None)))(batch, action)
        timesteps = jax.tree.map(np.asarray, timesteps)
        for i, state in enumerate(states):
            gym_env.state = state.astype(np.float64)  # The very same values as the float32 JAX state.
            gym_env.steps_beyond_terminated = None
            obs, reward, terminated, truncated, _ = gym_env.step(action)
            np.testing.assert_allclose(timesteps.observation[i], obs, **TOL)
            assert timesteps.observation.dtype == np.float32
            assert float(timesteps.reward[i]) == reward == 1.0
            if clear_of_thresholds(gym_env.state):
                assert bool(timesteps.last()[i]) == terminated
                assert float(timesteps.discount[i]) == (0.0 if terminated else 1.0)
            terminations.append(terminated)
    assert 0.1 < np.mean(terminations) < 0.9  # Both outcomes were exercised.


def test_rollouts_match_gymnasium_step_by_step():
    """Random and balancing policies, JAX resynced to gymnasium's float64 state before every step."""
    gym_env = gymnasium.make("CartPole-v1")
    rng = np.random.default_rng(1)
    lengths, truncations = [], 0
    for episode in range(8):
        obs, _ = gym_env.reset(seed=episode)
        state, _ = RESET(jax.random.key(episode))
        np.testing.assert_array_equal(np.asarray(state.steps), 0)
        balancing = episode % 4 == 3  # Keeps the pole up, so the time limit is what ends it.
        for t in range(1000):
            gym_state = gym_env.unwrapped.state.copy()
            if balancing:
                action = int(gym_state[2] + 0.5 * gym_state[3] + 0.01 * gym_state[0] + 0.1 * gym_state[1] > 0)
            else:
                action = int(rng.integers(2))
            state, timestep = STEP(to_jax(gym_state, steps=t), np.int32(action))
            obs, reward, terminated, truncated, _ = gym_env.step(action)
            np.testing.assert_allclose(timestep.observation, obs, **TOL)
            assert float(timestep.reward) == reward == 1.0
            if clear_of_thresholds(gym_env.unwrapped.state):
                done = terminated or truncated
                assert int(timestep.step_type) == (LAST if done else MID)
                assert float(timestep.discount) == (0.0 if terminated else 1.0)
            assert int(state.steps) == t + 1
            if terminated or truncated:
                break
        lengths.append(t + 1)
        truncations += truncated and not terminated
    assert truncations == 2 and lengths.count(500) == 2
    assert all(length < 500 for i, length in enumerate(lengths) if i % 4 != 3)


def test_free_running_episode_tracks_gymnasium():
    """Without resyncing, float32 stays within tolerance of float64 over a short random episode."""
    gym_env = gymnasium.make("CartPole-v1")
    rng = np.random.default_rng(2)
    for episode in range(5):
        gym_env.reset(seed=100 + episode)
        state = to_jax(gym_env.unwrapped.state)
        while True:
            action = int(rng.integers(2))
            state, timestep = STEP(state, np.int32(action))
            obs, _, terminated, truncated, _ = gym_env.step(action)
            np.testing.assert_allclose(timestep.observation, obs, rtol=1e-4, atol=1e-4)
            assert bool(timestep.last()) == (terminated or truncated)
            if terminated or truncated:
                break


def test_time_limit_truncates_with_discount_one():
    gym_state = np.array([0.01, -0.02, 0.03, 0.01])
    _, timestep = STEP(to_jax(gym_state, steps=498), jnp.int32(0))
    assert int(timestep.step_type) == MID
    _, timestep = STEP(to_jax(gym_state, steps=499), jnp.int32(0))
    assert int(timestep.step_type) == LAST and float(timestep.discount) == 1.0 and float(timestep.reward) == 1.0
    # Termination wins over truncation on the last allowed step.
    falling = np.array([0.0, 0.0, THETA_THRESHOLD - 1e-4, 1.0])
    _, timestep = STEP(to_jax(falling, steps=499), jnp.int32(0))
    assert int(timestep.step_type) == LAST and float(timestep.discount) == 0.0
    # The limit is a field.
    _, timestep = jax.jit(CartPole(max_episode_steps=10).step)(to_jax(gym_state, steps=9), jnp.int32(1))
    assert int(timestep.step_type) == LAST and float(timestep.discount) == 1.0


def test_reset_draws_uniform_start_states():
    states, timesteps = jax.jit(jax.vmap(ENV.reset))(jax.random.split(jax.random.key(0), 256))
    obs = np.asarray(timesteps.observation)
    assert obs.shape == (256, 4) and obs.dtype == np.float32
    assert np.all(np.abs(obs) <= 0.05)
    assert len(np.unique(obs, axis=0)) == 256  # Different keys, different starts.
    assert obs.std(axis=0).min() > 0.02  # Spread over the interval, roughly 0.1 / sqrt(12).
    np.testing.assert_array_equal(timesteps.step_type, FIRST)
    np.testing.assert_array_equal(timesteps.reward, 0.0)
    np.testing.assert_array_equal(timesteps.discount, 1.0)
    np.testing.assert_array_equal(states.steps, 0)
    assert states.steps.dtype == jnp.int32 and states.x.dtype == jnp.float32


def test_specs_match_gymnasium():
    space = gymnasium.make("CartPole-v1").observation_space
    spec = ENV.observation_spec()
    assert spec.shape == space.shape == (4,) and spec.dtype == space.dtype == np.float32
    f32_max = np.finfo(np.float32).max
    np.testing.assert_array_equal(spec.maximum, np.where(np.isinf(space.high), f32_max, space.high))
    np.testing.assert_array_equal(spec.minimum, np.where(np.isinf(space.low), -f32_max, space.low))
    assert ENV.action_spec().num_values == gymnasium.make("CartPole-v1").action_space.n == 2
    _, timestep = RESET(jax.random.key(0))
    spec.validate(np.asarray(timestep.observation))


def test_registered_as_cartpole():
    assert make("cartpole") == CartPole()
    assert make("cartpole", max_episode_steps=200).max_episode_steps == 200


def test_jit_vmap_and_scan():
    """The training stack composes: batched over environments, scanned over time, all in one jit."""
    env, num_envs, num_steps = wrap_for_training(CartPole()), 8, 600

    @jax.jit
    def rollout(key, actions):
        states, _ = env.reset(jax.random.split(key, num_envs))
        return jax.lax.scan(env.step, states, actions)

    actions = np.random.default_rng(3).integers(0, 2, (num_steps, num_envs)).astype(np.int32)
    _, timesteps = rollout(jax.random.key(0), actions)
    timesteps = jax.tree.map(np.asarray, timesteps)
    assert timesteps.observation.shape == (num_steps, num_envs, 4) and timesteps.observation.dtype == np.float32
    # Random play ends episodes by termination, after which AutoReset starts new ones.
    assert timesteps.last().sum() > num_envs and timesteps.first().sum() > num_envs
    np.testing.assert_array_equal(timesteps.discount[timesteps.step_type == MID], 1.0)
    np.testing.assert_array_equal(timesteps.discount[timesteps.step_type == LAST], 0.0)
    np.testing.assert_array_equal(timesteps.reward[timesteps.step_type != FIRST], 1.0)
