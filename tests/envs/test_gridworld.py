"""The four-rooms gridworld (Sutton, Precup & Singh, 1999)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.envs import FIRST, LAST, MID, FourRooms, gridworld, make
from podracer.envs.gridworld import DEFAULT_GOAL, HALLWAYS, SIZE, WALLS, FourRoomsState

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3


def _state(agent, goal=DEFAULT_GOAL, steps=0):
    return FourRoomsState(jnp.array(agent, jnp.int32), jnp.array(goal, jnp.int32), jnp.int32(steps))


def _components(free):
    """Connected components of free cells (4-neighbourhood), as a label grid."""
    labels = np.zeros(free.shape, int)
    count = 0
    for start in zip(*np.nonzero(free), strict=True):
        if labels[start]:
            continue
        count += 1
        stack = [start]
        labels[start] = count
        while stack:
            r, c = stack.pop()
            for dr, dc in ((-1, 0), (0, 1), (1, 0), (0, -1)):
                n = (r + dr, c + dc)
                if 0 <= n[0] < free.shape[0] and 0 <= n[1] < free.shape[1] and free[n] and not labels[n]:
                    labels[n] = count
                    stack.append(n)
    return labels, count


def test_layout_is_four_rooms_joined_by_four_hallways():
    assert WALLS.shape == (13, 13) == (SIZE, SIZE)
    assert WALLS[0].all() and WALLS[-1].all() and WALLS[:, 0].all() and WALLS[:, -1].all()
    free = ~WALLS
    assert free.sum() == 104  # As in the paper.
    assert all(free[h] for h in HALLWAYS)
    _, whole = _components(free)
    assert whole == 1  # Every free cell is reachable.
    rooms = free.copy()
    for h in HALLWAYS:
        rooms[h] = False
    labels, count = _components(rooms)
    assert count == 4
    assert sorted(np.bincount(labels[labels > 0])[1:]) == [20, 25, 25, 30]
    # Each hallway joins exactly two distinct rooms.
    joined = set()
    for r, c in HALLWAYS:
        neighbours = {labels[r + dr, c + dc] for dr, dc in ((-1, 0), (0, 1), (1, 0), (0, -1))} - {0}
        assert len(neighbours) == 2
        joined.add(frozenset(neighbours))
    assert len(joined) == 4  # A ring of rooms: TL-TR, TR-BR, BR-BL, BL-TL.
    # The default goal lies in a room corner, not a hallway.
    assert free[DEFAULT_GOAL] and labels[DEFAULT_GOAL] > 0


ENV = FourRooms()  # One environment and one compiled step for the single-step tests.
STEP = jax.jit(ENV.step)


def test_moves_and_walls_block():
    # (1, 1) is the top-left corner: up and left are blocked.
    for action, expected in ((UP, (1, 1)), (LEFT, (1, 1)), (RIGHT, (1, 2)), (DOWN, (2, 1))):
        state, timestep = STEP(_state((1, 1)), action)
        np.testing.assert_array_equal(state.agent, expected)
        assert int(timestep.step_type) == MID and float(timestep.reward) == 0.0
    # (2, 5) is next to the wall between the top rooms (no hallway in row 2).
    state, _ = STEP(_state((2, 5)), RIGHT)
    np.testing.assert_array_equal(state.agent, (2, 5))
    # ... but the hallway at (3, 6) lets the agent through to the other room.
    state, _ = STEP(_state((3, 5)), RIGHT)
    np.testing.assert_array_equal(state.agent, (3, 6))
    state, _ = STEP(state, RIGHT)
    np.testing.assert_array_equal(state.agent, (3, 7))
    # Vertical hallway (6, 2), with walls on both of its sides.
    state, _ = STEP(_state((5, 2)), DOWN)
    np.testing.assert_array_equal(state.agent, (6, 2))
    state, _ = STEP(_state((6, 2)), RIGHT)
    np.testing.assert_array_equal(state.agent, (6, 2))
    state, _ = STEP(_state((5, 3)), DOWN)
    np.testing.assert_array_equal(state.agent, (5, 3))
    # Hallway (7, 9) between the right-hand rooms.
    state, _ = STEP(_state((6, 9)), DOWN)
    np.testing.assert_array_equal(state.agent, (7, 9))
    state, _ = STEP(state, DOWN)
    np.testing.assert_array_equal(state.agent, (8, 9))


def test_goal_gives_reward_and_terminates():
    state, timestep = STEP(_state((10, 11)), DOWN)
    np.testing.assert_array_equal(state.agent, DEFAULT_GOAL)
    assert int(timestep.step_type) == LAST
    assert float(timestep.reward) == 1.0
    assert float(timestep.discount) == 0.0
    # Termination wins over truncation on the last allowed step.
    _, timestep = STEP(_state((10, 11), steps=ENV.max_episode_steps - 1), DOWN)
    assert int(timestep.step_type) == LAST and float(timestep.discount) == 0.0


def test_truncation_after_max_episode_steps():
    assert ENV.max_episode_steps == 100
    state = _state((1, 1), steps=ENV.max_episode_steps - 3)  # Far from the goal.
    for t in range(3):
        state, timestep = STEP(state, UP)  # Bumps the wall.
        assert int(timestep.step_type) == (LAST if t == 2 else MID)
        assert float(timestep.reward) == 0.0
        assert float(timestep.discount) == 1.0


def test_observation_planes():
    state = _state((4, 8))
    _, timestep = STEP(state, UP)
    obs = np.asarray(timestep.observation)
    assert obs.shape == (13, 13, 3) and obs.dtype == np.float32
    ENV.observation_spec().validate(obs)
    np.testing.assert_array_equal(obs[..., 0], WALLS.astype(np.float32))
    assert obs[..., 1].sum() == 1 and obs[3, 8, 1] == 1
    assert obs[..., 2].sum() == 1 and obs[DEFAULT_GOAL + (2,)] == 1


def _check_starts(states, timesteps, random_goal):
    agents, goals = np.asarray(states.agent), np.asarray(states.goal)
    assert not WALLS[agents[:, 0], agents[:, 1]].any()
    assert not WALLS[goals[:, 0], goals[:, 1]].any()
    assert not (agents == goals).all(axis=1).any()
    assert (np.asarray(timesteps.step_type) == FIRST).all()
    assert len({tuple(a) for a in agents}) == (104 if random_goal else 103)  # Every candidate cell occurs.
    if random_goal:
        assert len({tuple(g) for g in goals}) == 104
    else:
        assert (goals == DEFAULT_GOAL).all()
    obs = np.asarray(timesteps.observation)
    np.testing.assert_array_equal(obs[np.arange(len(agents)), agents[:, 0], agents[:, 1], 1], 1.0)


def _raw_keys(seed, n):
    """`n` threefry keys made with numpy (no eager jax op to compile)."""
    return np.random.default_rng(seed).integers(0, 2**32, (n, 2), dtype=np.uint32)


NUM_ENVS, NUM_STEPS = 1024, 8


@pytest.fixture(scope="module")
def batched():
    """One jitted program: vmapped resets (fixed and random goal) and a scan of vmapped steps."""
    random_goal_env = FourRooms(random_goal=True)

    @jax.jit
    def run(keys, actions):
        states, first = jax.vmap(ENV.reset)(keys)
        step = lambda s, a: (lambda s2, t: (s2, (s2.agent, t)))(*jax.vmap(ENV.step)(s, a))  # noqa: E731
        _, (agents, timesteps) = jax.lax.scan(step, states, actions)
        return (states, first), (agents, timesteps), jax.vmap(random_goal_env.reset)(keys)

    actions = np.random.default_rng(1).integers(0, 4, (NUM_STEPS, NUM_ENVS), dtype=np.int32)
    return jax.device_get(run(_raw_keys(0, NUM_ENVS), actions))


def test_vmapped_reset_and_scanned_steps_under_jit(batched):
    (states, first), (agents, timesteps), _ = batched
    _check_starts(states, first, random_goal=False)
    assert timesteps.observation.shape == (NUM_STEPS, NUM_ENVS, 13, 13, 3)
    path = np.concatenate([states.agent[None], agents])  # [T + 1, B, 2]
    assert set(np.unique(np.abs(np.diff(path, axis=0)).sum(-1))) <= {0, 1}  # One cell at most.
    assert (np.abs(np.diff(path, axis=0)).sum(-1) == 1).mean() > 0.5  # Most moves are not blocked.
    assert not WALLS[path[..., 0], path[..., 1]].any()


def test_random_goal_starts(batched):
    _, _, (states, timesteps) = batched
    _check_starts(states, timesteps, random_goal=True)
    goals = states.goal
    np.testing.assert_array_equal(timesteps.observation[np.arange(NUM_ENVS), goals[:, 0], goals[:, 1], 2], 1.0)


def test_registered():
    env = make("four_rooms", max_episode_steps=50, random_goal=True)
    assert env == FourRooms(max_episode_steps=50, random_goal=True)
    assert env.action_spec().num_values == 4
    assert gridworld.__doc__ and "Sutton" in gridworld.__doc__
    with pytest.raises(ValueError):
        FourRooms(max_episode_steps=0)
