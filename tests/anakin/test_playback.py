"""`podracer.anakin.play`: every step follows the environment's own rules from the state before it."""

import jax
import jax.numpy as jnp
import numpy as np

import podracer
from podracer.envs import FIRST, LAST, Catch

NUM_STEPS, NUM_ENVS = 30, 3


def random_agent(num_actions: int) -> podracer.Agent:
    """Acts uniformly at random with the keys it is given; learns nothing."""

    def act(params, observation, keys):
        return jax.vmap(lambda key: jax.random.randint(key, (), 0, num_actions))(keys), {}

    return podracer.Agent(init=None, act=act, learn=None, acting_params=lambda state: state)


def test_play_keeps_the_environments_own_states_and_restarts_finished_episodes():
    env = Catch()
    playback = jax.device_get(podracer.anakin.play(env, random_agent(3), {}, jax.random.key(0), NUM_STEPS, NUM_ENVS))
    assert playback.actions.shape == (NUM_STEPS, NUM_ENVS)
    assert playback.timesteps.step_type.shape == playback.episode_returns.shape == (NUM_STEPS + 1, NUM_ENVS)
    assert playback.states.ball_y.shape == (NUM_STEPS + 1, NUM_ENVS)  # Catch's own state, not the wrappers'.
    assert (playback.timesteps.step_type[0] == FIRST).all()
    step = jax.jit(env.step)
    finished = 0
    for b in range(NUM_ENVS):
        episode_return = 0.0
        for t in range(NUM_STEPS):
            state = jax.tree.map(lambda x: x[t, b], playback.states)
            after = jax.tree.map(lambda x: x[t + 1, b], (playback.states, playback.timesteps))
            if playback.timesteps.step_type[t, b] == LAST:  # The next step starts a new episode.
                assert after[1].step_type == FIRST and after[0].ball_y == 0
                episode_return = 0.0
                continue
            expected = step(state, jnp.int32(playback.actions[t, b]))
            jax.tree.map(np.testing.assert_array_equal, after, jax.device_get(expected))
            episode_return += float(after[1].reward)
            assert playback.episode_returns[t + 1, b] == episode_return
            finished += int(after[1].step_type == LAST)
    assert finished >= NUM_ENVS * 2  # Catch's episodes last 9 steps: each environment finished several.
