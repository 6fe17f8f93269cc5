"""Real-valued actions are clipped where they enter an environment, and only there."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

from podracer.envs import actions, timestep, wrap_for_training
from podracer.envs.base import Environment

BOX = specs.BoundedArray((2,), np.float32, minimum=[-1.0, 0.0], maximum=[1.0, 2.0])


def test_clip_to_spec_clips_real_actions_into_the_bounds():
    action = np.array([[-3.0, 5.0], [0.5, -0.1]], np.float32)
    expected = [[-1.0, 2.0], [0.5, 0.0]]
    np.testing.assert_array_equal(actions.clip_to_spec(action, BOX, xp=np), expected)
    np.testing.assert_array_equal(actions.clip_to_spec(jnp.asarray(action), BOX), expected)


def test_discrete_and_unbounded_actions_pass_unchanged():
    ids = np.array([0, 7, 3])
    assert actions.clip_to_spec(ids, specs.DiscreteArray(4)) is ids
    real = np.array([[9.0]], np.float32)
    assert actions.clip_to_spec(real, specs.Array((1,), np.float32)) is real


@dataclasses.dataclass(frozen=True)
class _EchoAction(Environment):
    """Observes the last action it received."""

    def reset(self, key):
        return jnp.zeros(2), timestep.restart(jnp.zeros(2))

    def step(self, state, action):
        return action, timestep.transition(action, 0.0, False, False)

    def observation_spec(self):
        return specs.Array((2,), np.float32)

    def action_spec(self):
        return BOX


def test_training_wrappers_hand_the_environment_clipped_actions():
    env = wrap_for_training(_EchoAction())
    state, _ = env.reset(jax.random.split(jax.random.key(0), 2))
    action = jnp.array([[-3.0, 5.0], [0.5, 1.0]])
    _, step = env.step(state, action)
    np.testing.assert_array_equal(step.observation, [[-1.0, 2.0], [0.5, 1.0]])
