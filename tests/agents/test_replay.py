"""The device replay buffer: what sampling returns after adds that wrap around, and prioritised sampling."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from podracer.agents.learning import replay
from podracer.agents.trajectory import Trajectory
from podracer.envs.timestep import MID, TimeStep

B, T, ROW = 3, 4, 10  # Environments, steps per added trajectory, items per buffer row.


def agent_config(**fields) -> replay.ReplaySettings:
    return replay.ReplaySettings(**{"buffer_size": B * ROW, "min_replay_size": B * 3, "batch_size": 64, **fields})


def trajectory(first_step: int) -> Trajectory:
    """T steps of B environments whose observation and action encode (environment, global step)."""
    steps = first_step + np.arange(T + 1)[:, None]
    ids = (1000 * np.arange(B)[None, :] + steps).astype(np.float32)
    return Trajectory(
        timestep=TimeStep(
            step_type=jnp.full((T + 1, B), MID, jnp.int32),
            reward=jnp.asarray(ids),
            discount=jnp.ones((T + 1, B)),
            observation=jnp.asarray(ids)[..., None],
        ),
        action=jnp.asarray(ids[:-1]).astype(jnp.int32),
        extras={},
    )


def filled(buffer, rollouts: int):
    state = buffer.init(replay.empty_item(jax.ShapeDtypeStruct((1,), jnp.float32), jax.ShapeDtypeStruct((), jnp.int32)))
    for r in range(rollouts):
        state = replay.add(buffer, state, trajectory(r * T))
    return state


@pytest.mark.parametrize("rollouts", [1, 2, 5])  # 4, 8 and 20 steps per row of 10: the last two wrap around.
def test_samples_are_consecutive_steps_of_one_environment_that_the_buffer_still_holds(rollouts):
    sequence = 3
    buffer = replay.make_buffer(agent_config(), B, sequence)
    state = filled(buffer, rollouts)
    added = rollouts * T
    held = range(max(0, added - ROW), added)  # The newest ROW steps of every environment; older ones are overwritten.
    starts = set()
    sample_from = jax.jit(lambda state, key: replay.sample(buffer, state, key, importance_exponent=0.4))
    for seed in range(20):
        sample = sample_from(state, jax.random.key(seed))
        ids = np.asarray(sample.trajectory.timestep.observation[..., 0])  # [L, S]
        assert ids.shape == (sequence, 64)
        assert sample.trajectory.action.shape == (sequence - 1, 64)
        np.testing.assert_array_equal(sample.trajectory.action, ids[:-1])  # Each step keeps its own action.
        env, step = ids // 1000, ids % 1000
        assert (env == env[0]).all(), "a sequence mixes environments"
        np.testing.assert_array_equal(np.diff(step, axis=0), 1)  # Consecutive steps, in order.
        assert set(step.ravel()) <= set(held), "a sample read an overwritten (stale) slot"
        np.testing.assert_array_equal(sample.weights, 1.0)
        starts |= set(zip(env[0], step[0], strict=True))
    possible = {(e, s) for e in range(B) for s in held if s + sequence - 1 < added}
    assert starts == possible  # Over 1,280 draws, every sequence the buffer holds was drawn.


def test_a_buffer_cannot_sample_before_it_holds_min_replay_size():
    buffer = replay.make_buffer(agent_config(min_replay_size=B * 6), B, 3)
    assert replay.min_rows(agent_config(min_replay_size=B * 6), B, 3) == 6
    assert not buffer.can_sample(filled(buffer, 1))
    assert buffer.can_sample(filled(buffer, 2))


def test_prioritised_sampling_follows_priority_to_the_exponent():
    alpha = 0.5
    config = agent_config(prioritised=True, priority_exponent=alpha, batch_size=4096)
    buffer = replay.make_buffer(config, B, 2)
    state = filled(buffer, 2)  # 8 steps per row: 7 sequences of 2 per environment.
    sample_from = jax.jit(lambda state, key: replay.sample(buffer, state, key, importance_exponent=0.4))
    first = sample_from(state, jax.random.key(0))
    indices = np.unique(np.asarray(first.indices))
    priorities = np.arange(1, len(indices) + 1, dtype=np.float32) ** 2
    state = replay.set_priorities(buffer, state, jnp.asarray(indices), jnp.asarray(priorities))
    sample = sample_from(state, jax.random.key(1))
    drawn = np.asarray(sample.indices)
    counts = np.array([(drawn == i).sum() for i in indices])
    expected = priorities**alpha / np.sum(priorities**alpha)
    assert counts.sum() == 4096
    np.testing.assert_allclose(counts / 4096, expected, atol=0.02)  # Binomial sd at most 0.008 per item.
    # Importance weights are (P(i))^-beta over their maximum: the rarest item has weight 1.
    probabilities = expected[np.searchsorted(indices, drawn)]
    np.testing.assert_allclose(sample.weights, (probabilities / probabilities.min()) ** -0.4, rtol=1e-4)


@struct.dataclass
class Learner:
    replay: Any
    learn_calls: jax.Array


def replay_setup(learn_calls_per_update: int) -> replay.ReplaySetup:
    return replay.ReplaySetup(
        buffer=replay.make_buffer(agent_config(buffer_size=2 * B * ROW), B * 2, 3),
        rows=B * 2,
        learn_calls_per_update=learn_calls_per_update,
        unroll_length=T,
        min_rows=ROW,  # Never samples: this checks what is added.
        replay_ratio=1,
        importance_exponent=0.4,
    )


def wide_trajectory(first_step: int) -> Trajectory:
    """`trajectory` over 2 B environments: environment e of the second half is environment e + B."""
    half = trajectory(first_step)
    shifted = jax.tree.map(lambda x: x + 1000 * B if x.dtype != jnp.int32 or x.ndim == 2 else x, half)
    shifted = shifted.replace(timestep=shifted.timestep.replace(step_type=half.timestep.step_type))
    return jax.tree.map(lambda a, b: jnp.concatenate([a, b], axis=1), half, shifted)


def test_learn_calls_that_split_an_update_add_the_same_rows_as_one_call():
    """With Sebulba's learner_minibatches = 2, each call holds half the environments: the buffer must get whole rows."""

    def gradient_step(state, drawn, axis_name):
        return state, {"loss": jnp.float32(0)}, jnp.zeros(drawn.indices.shape)

    states = {}
    for calls in (1, 2):
        setup = replay_setup(calls)
        learn = jax.jit(replay.make_learn(setup, gradient_step))
        item_spec = (jax.ShapeDtypeStruct((1,), jnp.float32), jax.ShapeDtypeStruct((), jnp.int32))
        state = Learner(replay.init(setup, *item_spec), jnp.int32(0))
        for rollout in range(3):  # The third wraps around rows of ROW.
            whole = wide_trajectory(rollout * T)
            for call in range(calls):
                part = jax.tree.map(lambda x, c=call: x[:, c * 2 * B // calls : (c + 1) * 2 * B // calls], whole)
                state, _ = learn(state, part, jax.random.key(0))
                if calls == 2 and call == 0:  # Staged, not yet added: the rows stay unbroken.
                    assert int(state.replay.value.buffer.current_index) == rollout * T % ROW
        states[calls] = state
    one, two = states[1].replay.value.buffer, states[2].replay.value.buffer
    assert int(two.current_index) == 3 * T % ROW and int(states[2].learn_calls) == 6
    for a, b in zip(jax.tree.leaves(one.experience), jax.tree.leaves(two.experience), strict=True):
        np.testing.assert_array_equal(a, b)
