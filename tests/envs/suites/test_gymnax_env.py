"""The gymnax adapter: gymnax's own transitions, dm_env's episode ends, specs, settings, every registered id."""

import dataclasses
import functools

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs
from gymnax.environments import spaces
from gymnax.utils import load_mnist

from podracer.envs import FIRST, LAST, MID, AutoReset
from podracer.envs.suites import gymnax_env

MNIST = "MNISTBandit-bsuite"  # Downloads MNIST when built; tested offline with fake data below.
KEY = jax.random.key(0)
TASKS = [task for task in gymnax.registered_envs if task != MNIST]
# gymnax observation spaces whose bounds their own observations break (found with random policies): the specs
# keep gymnax's bounds, but only their shapes and dtypes are checked for these.
BOUNDS_BROKEN = {
    "GaussianBandit-misc",  # The last reward is Gaussian and the time in [-1, 1]: declared [0, 2] and [0, 100].
    "MemoryChain-bsuite",  # The context is -1 or 1 (declared [0, 2]), 1 - time / length rounds to -1.5e-8.
    "MetaMaze-misc",  # The last reward reaches params.reward (10), declared [0, 1].
    "UmbrellaChain-bsuite",  # 1 - time / chain_length rounds to -1.5e-8 on the last step, declared [0, 1].
}


@functools.partial(jax.jit, static_argnums=0)
def _rollout(env, actions, key):
    """The adapter's timesteps over `actions`, each step beside gymnax's `step_env` from the same state and key.

    Returns (the FIRST timestep, (the adapter's timesteps, (gymnax's observations, rewards, terminations))),
    stacked over time. Compiled once per environment and shape of `actions`.
    """
    gymnax_env, params = env.gymnax_env, env.params

    def step(state, action):
        _, step_key = jax.random.split(state.key)  # The adapter's split: (next key, step key).
        observation, _, reward, terminated, _ = gymnax_env.step_env(step_key, state.env_state, action, params)
        state, timestep = env.step(state, action)
        return state, (timestep, (observation, reward, terminated))

    state, first = env.reset(key)
    return first, jax.lax.scan(step, state, actions)[1]


@pytest.mark.parametrize(
    "task, actions",
    [
        ("CartPole-v1", np.random.default_rng(0).integers(2, size=40).astype(np.int32)),
        ("Breakout-MinAtar", np.random.default_rng(1).integers(3, size=40).astype(np.int32)),  # Stochastic.
        ("Pendulum-v1", np.random.default_rng(2).uniform(-2, 2, size=(40, 1)).astype(np.float32)),
    ],
)
def test_observations_and_rewards_are_gymnax_step_env(task, actions):
    env = gymnax_env.make(task)
    first, (timesteps, (observations, rewards, _)) = _rollout(env, actions, KEY)
    assert int(first.step_type) == FIRST
    np.testing.assert_array_equal(timesteps.observation, observations)
    np.testing.assert_array_equal(timesteps.reward, rewards.astype(np.float32))
    assert timesteps.reward.dtype == jnp.float32


def test_termination_is_last_with_discount_zero_and_the_final_observation():
    env = gymnax_env.make("CartPole-v1")
    _, (timesteps, (observations, _, terminated)) = _rollout(env, jnp.ones(40, jnp.int32), KEY)  # Always push right.
    end = int(np.argmax(terminated))
    assert terminated[end] and not terminated[:end].any()
    np.testing.assert_array_equal(timesteps.step_type[: end + 1], [MID] * end + [LAST])
    assert timesteps.discount[end] == 0.0 and (timesteps.discount[:end] == 1.0).all()
    np.testing.assert_array_equal(timesteps.observation[end], observations[end])
    assert abs(timesteps.observation[end][2]) > env.params.theta_threshold_radians  # The fallen pole, not a reset.


def test_time_limit_is_last_with_discount_one_and_the_final_observation():
    env = gymnax_env.make("Pendulum-v1", max_steps_in_episode=5)  # Pendulum never terminates.
    _, (timesteps, (observations, _, _)) = _rollout(env, jnp.zeros((5, 1)), KEY)
    np.testing.assert_array_equal(timesteps.step_type, [MID] * 4 + [LAST])
    np.testing.assert_array_equal(timesteps.discount, [1.0] * 5)
    np.testing.assert_array_equal(timesteps.observation[-1], observations[-1])


def test_autoreset_starts_an_episode_the_step_after_the_time_limit():
    env = AutoReset(gymnax_env.make("Pendulum-v1", max_steps_in_episode=5))

    @jax.jit
    def run(key):
        state, _ = env.reset(key)
        return jax.lax.scan(env.step, state, jnp.zeros((7, 1)))[1]

    timesteps = run(jax.random.key(0))
    np.testing.assert_array_equal(timesteps.step_type, [MID] * 4 + [LAST, FIRST, MID])


def test_termination_wins_on_the_last_allowed_step():
    env = gymnax_env.make("Catch-bsuite", max_steps_in_episode=9)  # The ball lands on step 9 (10 rows).
    _, (timesteps, _) = _rollout(env, jnp.ones(9, jnp.int32), KEY)
    assert int(timesteps.step_type[-1]) == LAST and float(timesteps.discount[-1]) == 0.0
    assert (timesteps.step_type[:-1] == MID).all()


def test_space_conversion():
    assert gymnax_env.space_to_spec(spaces.Discrete(4), "action") == specs.DiscreteArray(4, np.int32, name="action")
    box = gymnax_env.space_to_spec(spaces.Box(-2.0, 2.0, (1,), jnp.float32), "action")
    assert box == specs.BoundedArray((1,), np.float32, -2.0, 2.0, name="action")
    low, high = np.array([0, -1], np.int32), np.array([3, 1], np.int32)
    ints = gymnax_env.space_to_spec(spaces.Box(low, high, (2,), jnp.int32), "observation")
    assert ints.dtype == np.int32 and (ints.minimum == low).all() and (ints.maximum == high).all()
    nested = gymnax_env.space_to_spec(spaces.Dict({"a": spaces.Discrete(2), "b": spaces.Box(0, 1, (3,))}), "obs")
    assert nested["a"].num_values == 2 and nested["b"].shape == (3,)
    with pytest.raises(NotImplementedError, match="Tuple"):
        gymnax_env.space_to_spec(spaces.Tuple([spaces.Discrete(2)]), "action")


def test_specs_of_suite_environments():
    pendulum = gymnax_env.make("Pendulum-v1")
    assert pendulum.action_spec() == specs.BoundedArray((1,), np.float32, -2.0, 2.0, name="action")
    assert gymnax_env.make("Breakout-MinAtar").action_spec() == specs.DiscreteArray(3, np.int32, name="action")
    catch = gymnax_env.make("Catch-bsuite").observation_spec()  # gymnax's space says int32; its boards are float32.
    assert (catch.shape, catch.dtype) == ((10, 5), np.float32)
    lake = gymnax_env.make("FrozenLake-misc").observation_spec()
    assert lake == specs.DiscreteArray(16, np.int32, name="observation")


def test_settings_are_env_params_or_constructor_arguments():
    assert gymnax_env.make("CartPole-v1", max_steps_in_episode=10).params.max_steps_in_episode == 10
    assert gymnax_env.make("Catch-bsuite", rows=6).observation_spec().shape == (6, 5)
    acrobot = gymnax_env.make("Acrobot-v1", available_torque=[-2.0, 0.0, 2.0])  # An array field, from a list.
    np.testing.assert_array_equal(acrobot.params.available_torque, [-2.0, 0.0, 2.0])
    with pytest.raises(ValueError, match=r"no setting gravity_x: its env params are \[.*'gravity'"):
        gymnax_env.make("CartPole-v1", gravity_x=1.0)
    with pytest.raises(ValueError, match="its constructor takes \\['rows', 'columns'\\]"):
        gymnax_env.make("Catch-bsuite", cols=3)


def test_adapters_are_hashable_values():
    a, b = gymnax_env.make("Acrobot-v1", dt=0.1), gymnax_env.make("Acrobot-v1", dt=0.1)
    assert a == b and hash(a) == hash(b) and a != gymnax_env.make("Acrobot-v1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.task = "CartPole-v1"


@pytest.mark.parametrize("task", TASKS)
def test_every_registered_env_builds_with_specs(task):
    env = gymnax_env.make(task)
    assert isinstance(env.action_spec(), specs.DiscreteArray | specs.BoundedArray)
    assert isinstance(env.observation_spec(), specs.Array)


@pytest.mark.slow  # Compiles every environment: about 15 s.
@pytest.mark.parametrize("task", TASKS)
def test_every_registered_env_steps_within_its_specs(task):
    env = gymnax_env.make(task)
    _check_steps(env, bounds=task not in BOUNDS_BROKEN)


def test_mnist_bandit_offline_says_what_it_needs(monkeypatch):
    def offline(url, *args, **kwargs):
        raise OSError(f"no network for {url}")

    monkeypatch.setattr(load_mnist, "_download", offline)
    gymnax_env._gymnax_env.cache_clear()
    with pytest.raises(RuntimeError, match="MNISTBandit-bsuite downloads the MNIST files into /tmp/mnist"):
        gymnax_env.make(MNIST)


def test_mnist_bandit_steps_with_its_data(monkeypatch):
    images = np.random.default_rng(0).integers(0, 127, size=(8, 28, 28)).astype(np.int8)
    labels = np.arange(8, dtype=np.uint8)
    monkeypatch.setattr(load_mnist, "load_mnist", lambda: ((images, labels), (images, labels)))
    gymnax_env._gymnax_env.cache_clear()
    try:
        _check_steps(gymnax_env.make(MNIST))
    finally:
        gymnax_env._gymnax_env.cache_clear()  # Drop the environment built from fake data.


def _check_steps(env, bounds=True):
    """Resets and steps `env` once under jit; the timesteps are valid for its specs (their bounds too if `bounds`)."""
    first, second = jax.jit(lambda key: _reset_and_step(env, key))(jax.random.key(0))
    assert int(first.step_type) == FIRST and int(second.step_type) in (MID, LAST)
    spec = env.observation_spec()
    for timestep in (first, second):
        (spec if bounds else specs.Array(spec.shape, spec.dtype)).validate(np.asarray(timestep.observation))
        assert (timestep.reward.shape, timestep.reward.dtype) == ((), jnp.float32)
        assert (timestep.discount.shape, timestep.discount.dtype) == ((), jnp.float32)


def _reset_and_step(env, key):
    """The FIRST timestep of `env` and the next one, after a zero action."""
    spec = env.action_spec()
    state, first = env.reset(key)
    return first, env.step(state, jnp.zeros(spec.shape, spec.dtype))[1]
