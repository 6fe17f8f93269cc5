"""PQN under Sebulba: the Anakin agent, fed by actor threads, learns from their rollouts with the same `learn`."""

import numpy as np
import pytest

import podracer
from tests.helpers import load_config


@pytest.mark.slow  # A Sebulba run with its threads.
def test_pqn_learns_from_actor_threads_rollouts():
    """A few updates of the envpool CartPole config: each learns from a rollout's Q-values and moves epsilon on."""
    fields = {
        "envs_per_thread": 4,
        "unroll_length": 8,
        "total_steps": 2 * 4 * 8 * 4,
        "log_every_updates": 1,
        "network.hidden_sizes": (16,),
        "agent.num_minibatches": 2,
        "agent.epsilon_fraction": 1.0,  # From 1 to 0.2 over the 4 updates.
    }
    history = podracer.train(load_config("sebulba_cartpole_pqn", fields)).history
    assert [r["step"] for r in history] == [64, 128, 192, 256]
    assert all(np.isfinite(r["loss"]) and r["loss"] > 0 for r in history)
    np.testing.assert_allclose([r["epsilon"] for r in history], [1.0, 0.8, 0.6, 0.4], rtol=1e-6)
