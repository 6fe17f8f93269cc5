"""The brax adapter: episodes end by termination (discount 0) or truncation (discount 1), specs, settings.

Importing brax (MuJoCo, its MJX and Warp) takes every test process seconds, so the whole file is slow: `make
test-fast` does not import it (`conftest.SLOW_FILES`).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

from podracer import envs
from podracer.envs import LAST, MID
from podracer.envs.suites import brax_env
from podracer.envs.wrappers import Batched

brax = brax_env.brax  # Imported by `brax_env`, which keeps brax's import quiet.
pytestmark = pytest.mark.slow


def test_envs_make_builds_the_adapter_with_its_settings():
    assert envs.make("brax:inverted_pendulum", episode_length=10) == brax_env.make(
        "inverted_pendulum", episode_length=10
    )


# Compiles brax's physics: about 6 s on 2 cores.
def test_inverted_pendulum_terminates_when_pushed_and_is_truncated_when_left_alone():
    """Two pendulums side by side: one pushed until the pole falls (discount 0), one left alone to the time limit."""
    episode_length = 20  # Left alone, the pole stays up longer than this; pushed, it falls in a few steps.
    env = Batched(brax_env.make("inverted_pendulum", episode_length=episode_length))
    push = jnp.array([[1.0], [0.0]])

    @jax.jit
    def run(key):
        state, _ = env.reset(jax.random.split(key, 2))
        return jax.lax.scan(lambda s, _: env.step(s, push), state, length=episode_length)[1]

    timesteps = run(jax.random.key(0))
    pushed, alone = np.argmax(timesteps.step_type == LAST, axis=0)
    assert 0 < pushed < episode_length - 1 and (timesteps.step_type[:pushed, 0] == MID).all()
    assert timesteps.discount[pushed, 0] == 0.0
    assert abs(timesteps.observation[pushed, 0, 1]) > 0.2  # The fallen pole's angle: the final observation.
    assert alone == episode_length - 1 and (timesteps.step_type[:alone, 1] == MID).all()
    np.testing.assert_array_equal(timesteps.discount[:, 1], 1.0)


class Countdown(brax.envs.Env):
    """A brax environment without physics that terminates on its `steps`-th step; it observes the steps taken."""

    def __init__(self, steps: int, backend: str):
        self.steps, self._backend = steps, backend

    def reset(self, rng):
        zero = jnp.zeros(())
        return brax.envs.State(pipeline_state=None, obs=jnp.zeros(1), reward=zero, done=zero)

    def step(self, state, action):
        obs = state.obs + 1
        return state.replace(obs=obs, reward=jnp.ones(()), done=(obs[0] >= self.steps).astype(jnp.float32))

    observation_size, action_size = 1, 1

    @property
    def backend(self):
        return self._backend


@pytest.mark.parametrize(
    "steps, episode_length, discount",
    [(2, 3, 0.0), (3, 3, 0.0), (4, 3, 1.0)],
    ids=["termination", "termination-wins-at-the-limit", "truncation"],
)
def test_brax_episode_bookkeeping(monkeypatch, steps, episode_length, discount):
    monkeypatch.setitem(brax.envs._envs, "countdown", Countdown)
    env = brax_env.make("countdown", episode_length=episode_length, steps=steps)
    timesteps = jax.jit(lambda key: _rollout(env, key, min(steps, episode_length)))(jax.random.key(0))
    np.testing.assert_array_equal(timesteps.step_type, [MID] * (len(timesteps.step_type) - 1) + [LAST])
    assert timesteps.discount[-1] == discount and timesteps.observation[-1] == min(steps, episode_length)


def _rollout(env, key, steps):
    state, _ = env.reset(key)
    return jax.lax.scan(lambda s, _: env.step(s, jnp.zeros(1)), state, length=steps)[1]


def test_specs():
    env = brax_env.make("inverted_pendulum")
    assert env.action_spec() == specs.BoundedArray((1,), np.float32, -1.0, 1.0, name="action")
    assert env.observation_spec() == specs.Array((4,), np.float32, name="observation")


def test_settings():
    assert brax_env.make("inverted_pendulum").brax_env.backend == brax_env.DEFAULT_BACKEND
    env = brax_env.make("inverted_pendulum", backend="generalized", episode_length=20, action_repeat=2)
    assert (env.brax_env.backend, env.brax_env.episode_length, env.brax_env.action_repeat) == ("generalized", 20, 2)
    same = brax_env.make("inverted_pendulum", action_repeat=2, episode_length=20, backend="generalized")
    assert env == same and hash(env) == hash(same)
    with pytest.raises(ValueError, match="episode_length must be a positive integer"):
        brax_env.make("inverted_pendulum", episode_length=0)
    with pytest.raises(ValueError, match="backend should be in"):
        brax_env.make("inverted_pendulum", backend="bullet")
    with pytest.raises(TypeError, match="gravity"):
        brax_env.make("inverted_pendulum", gravity=1.0)
