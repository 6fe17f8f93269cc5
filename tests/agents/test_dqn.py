"""DQN's targets and acting against NumPy references written from the papers (see `tests/references.py`)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents.algorithms import dqn
from podracer.agents.trajectory import Trajectory
from podracer.envs.timestep import LAST
from tests import references as ref


def np_n_step_target(step_type, reward, discount, q_online, q_target, gamma, double_q):
    """The target of the first transition of one sequence, as the sum the DQN docstring describes.

    Real rewards are summed until the n-th step or until the episode ends,
    then the bootstrap value of the state reached, discounted by gamma times
    the environment's discounts along the way.
    """
    n = len(step_type) - 1
    total, scale = 0.0, 1.0
    for k in range(1, n + 1):
        total += scale * reward[k]
        scale *= gamma * discount[k]
        if step_type[k] == LAST or k == n:
            action = np.argmax(q_online[k]) if double_q else np.argmax(q_target[k])
            return total + scale * q_target[k, action]


@pytest.mark.parametrize("double_q", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_n_step_targets_match_the_numpy_sum_over_every_window(n, double_q):
    """Each transition of a sequence whose n-step window fits in it has the target of that window alone."""
    trajectory = ref.make_trajectory(seed=n)
    rng = np.random.default_rng(10 + n)
    q_online = rng.normal(size=(ref.T + 1, ref.B, ref.A)).astype(np.float32)
    q_target = rng.normal(size=(ref.T + 1, ref.B, ref.A)).astype(np.float32)
    ts = trajectory.timestep
    targets = dqn.sequence_targets(trajectory, jnp.asarray(q_online), jnp.asarray(q_target), 0.9, double_q, 0.0, n)
    assert targets.shape == (ref.T + 1 - n, ref.B)
    for start in range(ref.T + 1 - n):
        window = slice(start, start + n + 1)
        got = targets[start]
        for b in range(ref.B):
            expected = np_n_step_target(
                np.asarray(ts.step_type)[window, b],
                np.asarray(ts.reward, np.float64)[window, b],
                np.asarray(ts.discount, np.float64)[window, b],
                q_online[window, b],
                q_target[window, b],
                0.9,
                double_q,
            )
            np.testing.assert_allclose(got[b], expected, rtol=1e-5, atol=1e-5)


def test_double_q_takes_the_online_networks_action_at_the_target_networks_value():
    """One step, no episode end: r + gamma Q_target(s', argmax Q_online(s')), not max Q_target(s')."""
    trajectory = ref.make_trajectory()
    sequence = Trajectory(
        timestep=jax.tree.map(lambda x: x[:2, 1:2], trajectory.timestep), action=trajectory.action[:1, 1:2], extras={}
    )
    q_online = jnp.zeros((2, 1, 3)).at[1, 0].set(jnp.array([0.0, 5.0, 1.0]))
    q_target = jnp.zeros((2, 1, 3)).at[1, 0].set(jnp.array([9.0, 2.0, 3.0]))
    reward = float(sequence.timestep.reward[1, 0])
    double = dqn.sequence_targets(sequence, q_online, q_target, 0.5, True, 0.0, n_step=1)[0]
    single = dqn.sequence_targets(sequence, q_online, q_target, 0.5, False, 0.0, n_step=1)[0]
    np.testing.assert_allclose(double, [reward + 0.5 * 2.0], rtol=1e-6)
    np.testing.assert_allclose(single, [reward + 0.5 * 9.0], rtol=1e-6)


# Bad replay settings exit 2 naming the field: tests/test_cli.py's BAD_INPUTS.
