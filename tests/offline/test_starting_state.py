"""An online run's start from an offline one: the dataset dealt into a buffer's rows, the learned fields taken."""

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from podracer.agents.learning import replay
from podracer.agents.learning.replay import ReplaySettings
from podracer.envs.timestep import FIRST, LAST, MID
from podracer.offline import dataset as dataset_rows
from podracer.offline.starting_state import as_streams, take_learned
from tests.offline.datasets import CONTINUOUS_ACTIONS, OBSERVATION_SPEC, random_episodes


def expected_items(episodes) -> dict:
    """Each episode's timesteps as an environment's buffer row holds them, written out one step at a time."""
    step_types, rewards, discounts, actions, vectors = [], [], [], [], []
    for episode in episodes:
        for t in range(episode.steps + 1):
            ends = t == episode.steps
            step_types.append(FIRST if t == 0 else LAST if ends else MID)
            rewards.append(0.0 if t == 0 else episode.rewards[t - 1])
            discounts.append(0.0 if ends and episode.terminations[-1] else 1.0)
            actions.append(np.zeros(2, np.float32) if ends else episode.actions[t])
            vectors.append(episode.observations["vector"][t])
    return {
        "step_type": np.array(step_types),
        "reward": np.array(rewards, np.float32),
        "discount": np.array(discounts, np.float32),
        "action": np.array(actions),
        "vector": np.array(vectors),
    }


def test_a_dataset_is_dealt_into_unbroken_rows_whose_last_timestep_ends_its_run():
    episodes = random_episodes(9, seed=3, discrete=False)
    dataset = dataset_rows.from_episodes(episodes, OBSERVATION_SPEC, CONTINUOUS_ACTIONS, {})
    streams = 3
    trajectory = as_streams(dataset, streams)
    length = dataset.rows // streams
    assert trajectory.action.shape == (length, streams, 2)
    assert trajectory.timestep.step_type.shape == (length + 1, streams)
    expected = expected_items(episodes)
    for stream in range(streams):
        rows = slice(stream * length, (stream + 1) * length)
        step_type = expected["step_type"][rows].copy()
        step_type[-1] = LAST  # The run's end: nothing learns a step from it into the buffer's next timestep.
        np.testing.assert_array_equal(trajectory.timestep.step_type[:-1, stream], step_type)
        np.testing.assert_array_equal(trajectory.timestep.reward[:-1, stream], expected["reward"][rows])
        np.testing.assert_array_equal(trajectory.timestep.discount[:-1, stream], expected["discount"][rows])
        np.testing.assert_array_equal(trajectory.action[:, stream], expected["action"][rows])
        np.testing.assert_array_equal(trajectory.timestep.observation["vector"][:-1, stream], expected["vector"][rows])


def test_remembered_rows_are_what_the_buffer_holds_and_samples_from():
    episodes = random_episodes(6, seed=1, discrete=False)
    dataset = dataset_rows.from_episodes(episodes, OBSERVATION_SPEC, CONTINUOUS_ACTIONS, {})
    settings = ReplaySettings(buffer_size=4 * 64, min_replay_size=8, batch_size=16)
    setup = replay.setup(settings, rows=2, learn_calls_per_update=1, unroll_length=4, sequence_length=2)

    @struct.dataclass
    class State:
        replay: object
        learn_calls: jax.Array

    state = State(replay.init(setup, OBSERVATION_SPEC, jax.ShapeDtypeStruct((2,), jnp.float32)), jnp.int32(0))
    streams = as_streams(dataset, 2)
    state = replay.remember(setup, state, streams)
    buffer = state.replay.value.buffer
    length = dataset.rows // 2
    assert int(buffer.current_index) == length
    held = np.swapaxes(np.asarray(buffer.experience["action"][:, :length]), 0, 1)
    np.testing.assert_array_equal(held, streams.action)
    assert bool(setup.buffer.can_sample(buffer))  # The first update learns: no wait for online steps.


def test_a_run_takes_what_the_offline_run_learned_but_not_its_replay_loop():
    @struct.dataclass
    class State:
        actor: jax.Array
        critic: jax.Array
        replay: object
        learn_calls: jax.Array

    online = State(actor=jnp.zeros(3), critic=jnp.zeros(2), replay=(jnp.ones(5),), learn_calls=jnp.int32(0))
    offline = State(actor=jnp.arange(3.0), critic=jnp.arange(2.0), replay=(), learn_calls=jnp.int32(40))
    started = take_learned(online, offline)
    np.testing.assert_array_equal(started.actor, offline.actor)
    np.testing.assert_array_equal(started.critic, offline.critic)
    assert started.replay is online.replay and int(started.learn_calls) == 0
