"""PQN's lambda-return targets and loss against NumPy references (`tests/references.py`), and its config checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs
from flax import struct

import podracer
from podracer import agents
from podracer.agents.algorithms import pqn
from podracer.config import settings
from podracer.config.errors import ConfigError
from tests import references as ref
from tests.helpers import load_config

GAMMA, SCALE = 0.9, 0.5
_DTYPES = (jnp.float32, jnp.int32, jnp.float32, jnp.float32)  # Of `pqn.Samples`' fields.


def random_q_values(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(ref.T + 1, ref.B, ref.A)).astype(np.float32)


@pytest.mark.parametrize("lam", [0.0, 0.65, 1.0])
def test_lambda_return_targets_match_the_numpy_loop(lam):
    """Every target of the 5 x 3 trajectory (a termination, a truncation and auto-resets in it) equals the loop's."""
    trajectory, q_values = ref.make_trajectory(seed=3), random_q_values(3)
    got = pqn.q_lambda_targets(trajectory, jnp.asarray(q_values), GAMMA, lam, SCALE)
    assert got.shape == (ref.T, ref.B)
    ref.close(got, ref.np_q_lambda_targets(trajectory, q_values, GAMMA, lam, SCALE))


def test_lambda_return_targets_term_by_term_at_episode_ends_and_the_rollouts_end():
    """Hand-computed terms, with lambda 0.65: where an episode ends the target stops there, whatever follows."""
    trajectory, q = ref.make_trajectory(seed=4), random_q_values(4).astype(np.float64)
    got = np.asarray(pqn.q_lambda_targets(trajectory, jnp.asarray(q, jnp.float32), GAMMA, 0.65, SCALE), np.float64)
    r = SCALE * np.asarray(trajectory.timestep.reward, np.float64)
    best = q.max(axis=-1)
    ref.close(got[1, 0], r[2, 0])  # Column 0 terminates at step 2 (discount 0): the reward alone.
    ref.close(got[2, 1], r[3, 1] + GAMMA * best[3, 1])  # Column 1 is truncated at step 3: bootstraps there, no lambda.
    ref.close(got[4, 2], r[5, 2])  # Column 2's rollout ends in a termination.
    ref.close(got[4, 0], r[5, 0] + GAMMA * best[5, 0])  # Mid-episode at the rollout's end: max Q of the last step.
    ref.close(got[3, 0], r[4, 0] + GAMMA * (0.65 * got[4, 0] + 0.35 * best[4, 0]))  # One step of the recursion.
    ref.close(got[0, 1], r[1, 1] + GAMMA * (0.65 * got[1, 1] + 0.35 * best[1, 1]))


@struct.dataclass
class LinearQ:
    """A linear Q-function with `NetworkParams.unroll`'s signature: Q(s) = s W."""

    weights: jax.Array  # [OBS, A]

    def unroll(self, state, observation, first):
        assert state == () and first.dtype == jnp.bool_ and first.shape == observation.shape[:-1]
        return state, observation @ self.weights


def test_loss_is_half_the_mean_squared_td_error_with_reset_steps_counting_zero():
    rng = np.random.default_rng(5)
    n = 12
    weights = rng.normal(size=(ref.OBS, ref.A))
    obs, action = rng.normal(size=(1, n, ref.OBS)), rng.integers(0, ref.A, size=(1, n))
    target, valid = rng.normal(size=(1, n)), (rng.random((1, n)) > 0.3).astype(np.float64)
    batch = pqn.Samples(
        *(jnp.asarray(x, dtype) for x, dtype in zip((obs, action, target, valid), _DTYPES, strict=True))
    )
    total, metrics = pqn.loss(LinearQ(jnp.asarray(weights, jnp.float32)), batch)
    chosen = np.take_along_axis(obs[0] @ weights, action[0, :, None], axis=-1)[:, 0]
    np_total = 0.5 * np.mean(valid[0] * (target[0] - chosen) ** 2)
    ref.close_loss(total, metrics, np_total, {"loss": np_total, "q_mean": np.mean(valid[0] * chosen)})


def test_targets_bootstrap_from_the_recorded_q_values_and_the_current_network_at_the_rollouts_end():
    """`make_samples` reads the Q-values `act` recorded at steps 1..T-1, and the network's own at step T."""
    config = podracer.defaults("pqn")
    config.network.hidden_sizes, config.network.layer_norm, config.agent.reward_scale = (8,), True, SCALE
    agent = agents.make(config, num_updates=10)
    observation_spec, action_spec = specs.Array((ref.OBS,), np.float32), specs.DiscreteArray(ref.A)
    state = jax.jit(lambda key: agent.init(key, observation_spec, action_spec))(jax.random.key(0))  # Eager: 4 s.
    trajectory = ref.make_trajectory(seed=6)
    recorded = random_q_values(6)[: ref.T]
    trajectory = trajectory.replace(extras={"q_values": jnp.asarray(recorded)})

    @jax.jit
    def samples_and_last_q(params, trajectory):
        return pqn.make_samples(params, trajectory, settings.read(pqn.TargetSettings, config.agent))[0], params.step(
            (), trajectory.timestep.observation[-1]
        )

    samples, (_, last_q) = samples_and_last_q(state.params, trajectory)
    q_values = np.concatenate([recorded, np.asarray(last_q)[None]])
    expected = ref.np_q_lambda_targets(trajectory, q_values, config.agent.gamma, config.agent.td_lambda, SCALE)
    ref.close(samples.target, expected.reshape(1, -1))
    np.testing.assert_array_equal(samples.action, np.asarray(trajectory.action).reshape(1, -1))
    _, _, valid, _ = ref.np_transitions(trajectory, config.agent.gamma, 0.0)
    np.testing.assert_array_equal(samples.valid, valid.reshape(1, -1))
    np.testing.assert_array_equal(
        samples.observation[0], np.asarray(trajectory.timestep.observation[:-1]).reshape(-1, ref.OBS)
    )
    torso = state.params.variables["params"]["MLP_0"]  # With network.layer_norm: LayerNorm after the hidden layer.
    assert sorted(torso) == ["Dense_0", "LayerNorm_0"] and torso["LayerNorm_0"]["scale"].shape == (8,)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"agent.td_lambda": 1.5}, "agent.td_lambda"),
        ({"agent.td_lambda": -0.1}, "agent.td_lambda"),
        ({"agent.num_epochs": 0}, "agent.num_epochs"),
        ({"agent.reward_scale": 0.0}, "agent.reward_scale"),
        ({"agent.epsilon_end": 2.0}, "agent.epsilon_end"),
        ({"network.core": "lstm"}, "network.core"),
        ({"network.torso": "nature_cnn"}, "network.layer_norm"),
    ],
)
def test_bad_values_are_config_errors_naming_the_field(fields, field):
    config = load_config("anakin_cartpole_pqn", fields)
    with pytest.raises(ConfigError) as error:
        podracer.validate_config(config)
    assert error.value.field == field
