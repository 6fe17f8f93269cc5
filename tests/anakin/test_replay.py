"""Anakin with a replay agent: each device's buffer holds its own environments' steps, and DQN learns CartPole."""

import jax
import numpy as np
import pytest

import podracer
from tests.helpers import load_config


@pytest.mark.slow  # 15 s: two runs.
def test_each_device_buffer_holds_the_steps_of_its_own_environments():
    """Split over 2 devices, the buffers are the 1-device buffer's rows, device by device.

    Acting is uniformly random (epsilon 1) and the buffer never fills enough
    to learn, so the data depend only on each environment's own keys.
    """
    fields = {
        "num_envs": 4,
        "unroll_length": 3,
        "updates_per_dispatch": 2,
        "total_steps": 24,
        "agent.epsilon_end": 1.0,
    }
    buffers = {}
    for n in (1, 2):  # buffer_size is per device: rows of 100 items either way.
        size = {"agent.buffer_size": 400 // n, "agent.min_replay_size": 400 // n}
        config = load_config("anakin_cartpole_dqn", num_devices=n, **fields, **size)
        buffers[n] = podracer.train(config).learner_state.replay.value.buffer
    one, two = buffers[1].experience, buffers[2].experience
    observations = two["timestep"].observation
    assert observations.shape[:3] == (2, 2, 100)  # [devices, environments per device, items per row].
    assert observations.sharding.shard_shape(observations.shape)[0] == 1  # Each device holds only its own.
    for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(two), strict=True):
        np.testing.assert_array_equal(np.reshape(a, (4, *a.shape[2:])), np.reshape(b, (4, *b.shape[2:])))
    np.testing.assert_array_equal(buffers[2].current_index, [6, 6])  # 2 dispatches x 3 steps on each device.
    assert not np.array_equal(observations[0, :, :6], observations[1, :, :6])
    assert np.all(observations[:, :, 6:] == 0)  # Nothing written past the steps taken.


@pytest.mark.slow  # About 30 s.
@pytest.mark.default_compile  # Mostly runs, not compiles: 120K steps took 58 s here, 84 at -O0.
@pytest.mark.learning("last 100 episodes", at_least=100, random=22)
def test_dqn_learns_cartpole(learning):
    """60,000 of the config's 400,000 steps (random: 22); the whole budget solves CartPole (500 by 320,000 steps,
    `docs/configuring.md`). Every seed passes 100 by 20,000 steps, and then climbs at its own pace: at 120,000 steps
    seeds 0-4 were anywhere from 133 to 334, so the bound is the point all of them pass early."""
    config = load_config("anakin_cartpole_dqn", num_devices=1, total_steps=60_000, seed=learning.seed)
    history = podracer.train(config).history
    assert history[0]["mean_episode_return"] < 100
    learning.check(podracer.recent_return(history))


@pytest.mark.slow  # About 8 s: three runs of one program in this process.
def test_prioritised_dqn_resumed_from_a_checkpoint_ends_bitwise_and_sets_priorities_from_td_errors(tmp_path):
    """The buffer is in the checkpoint: half a run, then resumed to the end, equals the whole run bitwise.

    The buffer is prioritised, so its sum tree must come back too (a uniform device buffer resumes bitwise in
    `test_off_policy.py`). Items are added at the highest priority so far; once learning starts, sampled ones
    get |TD error| ** alpha: the priorities of the whole run are set per item, not one shared value.
    """
    fields = {
        "num_devices": 1,
        "num_envs": 8,
        "unroll_length": 2,
        "updates_per_dispatch": 20,
        "checkpoint.every_updates": 20,
        "checkpoint.every_minutes": 0,
        "agent.prioritised": True,
        "agent.min_replay_size": 160,  # Learning starts in the first dispatch (rows of 20 after 10 updates).
        "agent.epsilon_start": 0.5,  # A constant epsilon: the schedule does not depend on the run's length.
        "agent.epsilon_end": 0.5,
    }
    whole_steps = 8 * 2 * 20 * 4

    def train(workdir: str, total_steps: int) -> podracer.TrainResult:
        config = load_config("anakin_cartpole_dqn", {**fields, "total_steps": total_steps})
        return podracer.train(config, workdir=str(tmp_path / workdir))

    whole = train("whole", whole_steps)
    train("split", whole_steps // 2)
    resumed = train("split", whole_steps)
    for a, b in zip(jax.tree.leaves(whole.learner_state), jax.tree.leaves(resumed.learner_state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert [r["step"] for r in resumed.history] == [r["step"] for r in whole.history]

    tree = whole.learner_state.replay.value.buffer.sum_tree_state
    leaves = np.asarray(tree.nodes)[0, -tree.capacity :]  # The one device's priorities, one per item.
    written = leaves[leaves > 0]
    assert written.size > 0 and np.unique(written).size > written.size // 2  # Set per item, not one shared value.
    assert np.all(np.isfinite(whole.history[-1]["loss"]))
