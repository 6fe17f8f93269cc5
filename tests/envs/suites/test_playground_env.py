"""The MuJoCo Playground adapter: Playground's own steps, episode ends, dict observations, specs, settings."""

import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs
from ml_collections import config_dict
from mujoco import mjx

from podracer.envs import FIRST, LAST, MID
from podracer.envs.suites import playground_env
from podracer.envs.wrappers import Batched

pytestmark = pytest.mark.slow  # The whole file: see conftest.py.

mujoco_playground = playground_env.mujoco_playground
dm_control_suite = playground_env.dm_control_suite


@pytest.mark.slow  # Compiles CartpoleBalance's physics: about 20 s on 2 shared cores.
def test_cartpole_matches_playground_step_by_step_to_truncation_and_termination():
    """Two carts: one runs to the time limit (discount 1), one gets a NaN force at step 3, which ends its task.

    Playground's own `reset` and `step` (no time limit) run beside the adapter, on the same keys and actions.
    """
    episode_length, nan_step = 6, 3
    env = Batched(playground_env.make("CartpoleBalance", episode_length=episode_length))
    playground = env.env.playground_env
    actions = jax.random.uniform(jax.random.key(1), (episode_length, 2, 1), minval=-1.0, maxval=1.0)
    actions = actions.at[nan_step, 1].set(jnp.nan)  # The physics diverges: Playground's `done`.

    @jax.jit
    def run(keys):
        (state, first), theirs = env.reset(keys), jax.vmap(playground.reset)(keys)

        def step(states, action):
            (state, timestep), theirs = env.step(states[0], action), jax.vmap(playground.step)(states[1], action)
            return (state, theirs), (timestep, theirs)

        return first, theirs.obs, jax.lax.scan(step, (state, theirs), actions)[1]

    first, their_first, (timesteps, theirs) = run(jax.random.split(jax.random.key(0), 2))
    np.testing.assert_array_equal(first.observation, their_first)
    np.testing.assert_array_equal(first.step_type, FIRST)
    for env_index, last in ((0, episode_length - 1), (1, nan_step)):
        steps = slice(0, last + 1)
        np.testing.assert_array_equal(timesteps.observation[steps, env_index], theirs.obs[steps, env_index])
        np.testing.assert_array_equal(timesteps.reward[steps, env_index], theirs.reward[steps, env_index])
        np.testing.assert_array_equal(timesteps.step_type[steps, env_index], [MID] * last + [LAST])
    assert not theirs.done[:, 0].any() and timesteps.discount[-1, 0] == 1.0  # Truncated by the adapter's time limit.
    assert theirs.done[nan_step, 1] == 1.0 and not theirs.done[:nan_step, 1].any()  # Playground's termination.
    assert timesteps.discount[nan_step, 1] == 0.0 and np.isnan(timesteps.observation[nan_step, 1]).any()


class Countdown(mujoco_playground.MjxEnv):
    """A Playground environment without physics that ends its task on its `steps`-th step, observing a dict."""

    def reset(self, rng):
        zero = jnp.zeros(())
        obs = {"state": jnp.zeros(1), "privileged_state": jnp.zeros(2, jnp.int32)}
        return mujoco_playground.State(data=None, obs=obs, reward=zero, done=zero, metrics={}, info={})

    def step(self, state, action):
        count = state.obs["state"] + 1
        obs = {"state": count, "privileged_state": state.obs["privileged_state"] + 1}
        done = (count[0] >= self._config.steps).astype(jnp.float32)
        return state.replace(obs=obs, reward=jnp.ones(()), done=done)

    action_size, xml_path, mj_model, mjx_model = 1, None, None, None


def countdown_config():
    return config_dict.create(ctrl_dt=0.01, sim_dt=0.01, episode_length=1000, action_repeat=1, steps=1)


@pytest.fixture
def countdown(monkeypatch):
    monkeypatch.setitem(dm_control_suite._envs, "Countdown", Countdown)
    monkeypatch.setitem(dm_control_suite._cfgs, "Countdown", countdown_config)


@pytest.mark.parametrize(
    "steps, episode_length, action_repeat, discount",
    [(2, 3, 1, 0.0), (3, 3, 1, 0.0), (4, 3, 1, 1.0), (4, 4, 2, 0.0), (5, 4, 2, 1.0)],
    ids=["termination", "termination-wins-at-the-limit", "truncation", "repeated-termination", "repeated-truncation"],
)
def test_episode_bookkeeping(countdown, steps, episode_length, action_repeat, discount):
    env = playground_env.make("Countdown", steps=steps, episode_length=episode_length, action_repeat=action_repeat)
    length = -(-min(steps, episode_length) // action_repeat)  # Adapter steps, each `action_repeat` of Countdown's.

    @jax.jit
    def run(key):
        state, _ = env.reset(key)
        return jax.lax.scan(lambda s, _: env.step(s, jnp.zeros(1)), state, length=length)[1]

    timesteps = run(jax.random.key(0))
    np.testing.assert_array_equal(timesteps.step_type, [MID] * (length - 1) + [LAST])
    np.testing.assert_array_equal(timesteps.reward, action_repeat)
    assert timesteps.discount[-1] == discount
    assert timesteps.observation["state"][-1] == length * action_repeat  # The episode's real last observation.


def test_specs_are_what_reset_returns(countdown):
    nested = playground_env.make("Countdown")
    assert nested.observation_spec() == {
        "privileged_state": specs.Array((2,), np.int32, name="privileged_state"),
        "state": specs.Array((1,), np.float32, name="state"),
    }
    cartpole = playground_env.make("CartpoleBalance")
    size = cartpole.playground_env.observation_size  # Playground's own answer.
    assert cartpole.observation_spec() == specs.Array((size,), np.float32, name="observation")
    action = specs.BoundedArray((cartpole.playground_env.action_size,), np.float32, -1.0, 1.0, name="action")
    assert cartpole.action_spec() == action


def test_the_state_keeps_no_zero_size_arrays():
    """MJX's data has several, which orbax cannot checkpoint and XLA returns unsharded; the adapter leaves them out."""
    env, key = playground_env.make("CartpoleBalance"), jax.random.key(0)
    assert any(leaf.size == 0 for leaf in jax.tree.leaves(jax.eval_shape(env.playground_env.reset, key)))
    stepped = jax.eval_shape(lambda key: env.step(env.reset(key)[0], jnp.zeros(1))[0], key)
    assert all(leaf.size for leaf in jax.tree.leaves(stepped))


def test_settings():
    env = playground_env.make("CartpoleBalance")
    assert env.playground_env.mjx_model.impl == mjx.Impl.JAX  # Not Playground's default, Warp.
    assert playground_env.make("CartpoleBalance", impl="cpp").playground_env.mjx_model.impl == mjx.Impl.CPP
    env = playground_env.make("CartpoleBalance", episode_length=20, action_repeat=2, vision_config={"nworld": 8})
    assert (env.episode_env.episode_length, env.episode_env.action_repeat) == (20, 2)
    assert env.playground_env._config.vision_config.nworld == 8
    same = playground_env.make("CartpoleBalance", **{"vision_config.nworld": 8, "action_repeat": 2}, episode_length=20)
    assert env == same and hash(env) == hash(same)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"gravity": 1.0},
            r"no setting gravity: its config's fields are \['action_repeat', 'ctrl_dt', 'episode_length'",
        ),
        ({"vision_config": {"fov": 1}}, "no setting vision_config.fov"),
        ({"episode_length": 0}, "episode_length must be a positive integer"),
        ({"action_repeat": 1.5}, "action_repeat must be a whole number"),
        ({"impl": "mjx"}, r"impl must be one of \['cpp', 'jax', 'warp'\]"),
        ({"ctrl_dt": "fast"}, "ctrl_dt must be a number"),
        ({"vision_config": {"cam_res": 64}}, "cam_res"),  # Left to ml_collections' own check.
    ],
)
def test_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        playground_env.make("CartpoleBalance", **kwargs)


def test_tasks(monkeypatch):
    assert playground_env.task_names() == list(playground_env.registry.ALL_ENVS)
    assert playground_env.is_task("CartpoleBalance") and not playground_env.is_task("CartpoleBalanced")
    monkeypatch.setitem(dm_control_suite._envs, "Countdown", Countdown)
    assert playground_env.is_task("Countdown")  # Registered after import.


def test_a_missing_menagerie_says_how_to_get_it(monkeypatch):
    def no_internet():
        raise subprocess.CalledProcessError(128, ["git", "clone"])

    monkeypatch.setattr(playground_env.mjx_env, "ensure_menagerie_exists", no_internet)
    with pytest.raises(RuntimeError, match="needs mujoco_menagerie, which Playground clones from GitHub"):
        playground_env.make("Go1JoystickFlatTerrain")
