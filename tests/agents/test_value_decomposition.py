"""Value decomposition (`podracer.agents.several_agents.mixers`, `value_decomposition`, `q_mixing`, `pqn_vdn`): the
mixers and the TD targets against NumPy written from the papers (Sunehag et al. 2018, eq. 1; Rashid et al. 2018,
Section 4.2 and eq. 5-6; van Hasselt et al. 2016, eq. 4), QMIX's monotonicity, and what is refused."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

import podracer
from podracer import agents, envs
from podracer.agents.algorithms import pqn
from podracer.agents.learning import replay
from podracer.agents.models import networks
from podracer.agents.several_agents import mixers, pqn_vdn, value_decomposition
from podracer.agents.trajectory import Trajectory
from podracer.envs.actions import AGENT_ID, GLOBAL_STATE
from podracer.envs.multi_agent import LOCAL
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep
from tests.helpers import load_config
from tests.programs.coordination_game import get_config, refused_field

N, E, D, A, OBS = 3, 4, 5, 3, 2


def np_elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def np_qmix(q, w_1, b_1, w_2, b_2):
    """Rashid et al. 2018, Section 4.2: one hidden layer of E ELUs, non-negative weights."""
    return np_elu(q @ np.abs(w_1) + b_1) @ np.abs(w_2) + b_2


def test_the_monotonic_mix_matches_numpy_with_hand_weights():
    rng = np.random.default_rng(0)
    q, w_1, b_1, w_2 = rng.normal(size=N), rng.normal(size=(N, E)), rng.normal(size=E), rng.normal(size=E)
    got = mixers.monotonic_mix(*(jnp.asarray(x, jnp.float32) for x in (q, w_1, b_1, w_2)), jnp.float32(0.7))
    np.testing.assert_allclose(got, np_qmix(q, w_1, b_1, w_2, 0.7), rtol=1e-5)


def test_vdn_sums_the_agents_values():
    q = np.random.default_rng(1).normal(size=(4, 2, N)).astype(np.float32)
    np.testing.assert_allclose(mixers.vdn_mix(jnp.asarray(q)), q.sum(-1), rtol=1e-6)
    np.testing.assert_allclose(mixers.mix("vdn", None, {}, jnp.asarray(q), None)[..., 0], q.sum(-1), rtol=1e-6)
    np.testing.assert_array_equal(mixers.mix("none", None, {}, jnp.asarray(q), None), q)


def test_the_qmix_mixer_is_monotonic_in_every_agent_and_reads_the_state():
    """dQ_tot/dQ_a >= 0 (eq. 5) for random states and values, and the state changes Q_tot (the hypernetworks)."""
    mixer = mixers.QMixer(embedding_size=E, hypernet_hidden_size=8, init_scale=1.0)
    keys = jax.random.split(jax.random.key(0), 3)
    q, state = jax.random.normal(keys[0], (64, N)) * 5, jax.random.normal(keys[1], (64, D))
    variables = mixer.init(keys[2], q, state)
    grads = jax.vmap(jax.grad(lambda q1, s1: mixer.apply(variables, q1, s1)))(q, state)
    assert grads.shape == (64, N) and float(grads.min()) >= 0.0 and float(grads.max()) > 0.0
    other_state = mixer.apply(variables, q, jnp.roll(state, 1, axis=0))
    assert float(jnp.abs(other_state - mixer.apply(variables, q, state)).max()) > 1e-3


def test_the_team_learns_from_the_agents_mean_reward_and_goes_on_while_any_agent_does():
    rewards, discounts = jnp.array([[[1.0, 2.0, 6.0]]]), jnp.array([[[0.0, 0.9, 0.0]]])
    team_reward, team_discount = value_decomposition.team_transitions(rewards, discounts, "qmix")
    np.testing.assert_allclose(team_reward, [[[3.0]]])
    np.testing.assert_allclose(team_discount, [[[0.9]]])
    assert value_decomposition.team_transitions(rewards, discounts, "none")[0] is rewards


@pytest.mark.parametrize("double_q", [True, False])
def test_bootstrap_values_take_the_online_argmax_at_the_target_value(double_q):
    online = jnp.array([[[1.0, 3.0, 2.0], [5.0, 0.0, 1.0]]])
    target = jnp.array([[[7.0, 1.0, 4.0], [2.0, 9.0, 3.0]]])
    expected = [[1.0, 2.0]] if double_q else [[7.0, 9.0]]
    np.testing.assert_allclose(value_decomposition.bootstrap_values(online, target, double_q), expected)


def sampled_sequences(seed: int) -> replay.Sample:
    """Two sequences of three steps of N agents: column 0 goes on, column 1's episode terminates after one step (the
    last step is the next episode's FIRST), with one agent dead (discount 0) in column 0's second step."""
    rng = np.random.default_rng(seed)
    step_type = np.array([[MID, MID], [MID, LAST], [MID, FIRST]], np.int32)
    discount = np.ones((3, 2, N), np.float32)
    discount[1, 1] = 0.0
    discount[1, 0, 0] = 0.0
    observation = {
        LOCAL: rng.normal(size=(3, 2, N, OBS)).astype(np.float32),
        GLOBAL_STATE: rng.normal(size=(3, 2, D)).astype(np.float32),
    }
    timestep = TimeStep(step_type, rng.normal(size=(3, 2, N)).astype(np.float32), discount, observation)
    trajectory = Trajectory(timestep, rng.integers(0, A, size=(2, 2, N)).astype(np.int32), {})
    return replay.uniform_sample(jax.tree.map(jnp.asarray, trajectory))


def np_agent_q_values(params, observation) -> np.ndarray:
    """Each agent's Q-values `[L, S, N, A]`, the network applied to one agent at a time (its observation and id)."""
    per_agent = []
    for agent in range(N):
        view = {LOCAL: observation[LOCAL][:, :, agent], AGENT_ID: jnp.broadcast_to(jnp.eye(N)[agent], (3, 2, N))}
        per_agent.append(np.asarray(params.unroll((), view, jnp.zeros((3, 2), bool))[1], np.float64))
    return np.stack(per_agent, axis=2)


@pytest.mark.parametrize("mixer", ["none", "vdn", "qmix"])
def test_the_loss_is_the_squared_error_of_the_mixed_values_against_two_step_double_q_targets(mixer):
    """y = r_0 + g d_0 r_1 + g^2 d_0 d_1 Q_tot^-(s_2, u*), cut at the termination (y = r_0 there); rewards times 2
    (`reward_scale`), the team's the agents' mean, its discount their largest; only the first transition is trained."""
    sample, gamma, scale = sampled_sequences(0), 0.9, 2.0
    module = networks.QNetwork(action_size=A, hidden_sizes=(8,))
    spec = {LOCAL: specs.Array((OBS,), np.float32), AGENT_ID: specs.Array((N,), np.float32)}
    online, target = (networks.init_module(jax.random.key(k), module, spec) for k in (1, 2))
    qmix = mixers.QMixer(embedding_size=E, hypernet_hidden_size=8, init_scale=1.0) if mixer == "qmix" else None
    mixer_vars = [
        {} if qmix is None else qmix.init(jax.random.key(k), jnp.zeros((1, N)), jnp.zeros((1, D))) for k in (3, 4)
    ]
    settings = value_decomposition.LossSettings(mixer, gamma, 2, True, 0.0, scale, 0, 1, 0.9)
    params = value_decomposition.Params(online, mixer_vars[0])
    target_params = value_decomposition.Params(target, mixer_vars[1])
    total, (metrics, _) = value_decomposition.loss(params, sample, target_params, qmix, settings)

    trajectory = jax.tree.map(np.asarray, sample.trajectory)
    q_online, q_target = (np_agent_q_values(p, trajectory.timestep.observation) for p in (online, target))
    choice = q_online.argmax(-1)
    next_values = np.take_along_axis(q_target, choice[..., None], -1)[..., 0]  # [L, S, N]
    chosen = np.take_along_axis(q_online[0], trajectory.action[0][..., None], -1)[..., 0]  # [S, N]

    def mixed(values, variables, step):  # [S, N] -> [S, K]
        if mixer == "none":
            return values
        if mixer == "vdn":
            return values.sum(-1, keepdims=True)
        state = trajectory.timestep.observation[GLOBAL_STATE][step]
        return np.asarray(qmix.apply(variables, jnp.asarray(values, jnp.float32), state), np.float64)[:, None]

    reward, discount = scale * trajectory.timestep.reward.astype(np.float64), trajectory.timestep.discount
    if mixer != "none":
        reward, discount = reward.mean(-1, keepdims=True), discount.max(-1, keepdims=True)
    bootstrap = mixed(next_values[2], mixer_vars[1], 2)
    y = reward[1] + gamma * discount[1] * (reward[2] + gamma * discount[2] * bootstrap)
    y[1] = reward[1][1] + gamma * discount[1][1] * mixed(next_values[1], mixer_vars[1], 1)[1]  # Terminated: no r_1.
    expected = np.mean((y - mixed(chosen, mixer_vars[0], 0)) ** 2)
    np.testing.assert_allclose(total, expected, rtol=2e-4)
    np.testing.assert_allclose(metrics["loss"], expected, rtol=2e-4)


def test_pqn_vdn_bootstraps_the_teams_lambda_return_from_the_summed_greedy_values():
    """R_t = r_t + g d_t [l R_{t+1} + (1 - l) sum_a max_u Q_a(s_{t+1}, u)], R_T = sum_a max_u Q_a(s_T, u), l cut to 0 at
    the termination; r_t the agents' mean reward, d_t their largest discount."""
    sample, gamma, td_lambda = sampled_sequences(1), 0.9, 0.5
    trajectory = sample.trajectory
    q_values = jax.random.normal(jax.random.key(0), (3, 2, N, A))
    settings = pqn.TargetSettings(gamma=gamma, td_lambda=td_lambda, reward_scale=1.0, reward_clip=0.0)
    got = pqn_vdn.team_lambda_targets(trajectory, q_values, settings)
    values = np.asarray(q_values, np.float64).max(-1).sum(-1)  # [3, S]
    reward = np.asarray(trajectory.timestep.reward, np.float64).mean(-1)
    discount = gamma * np.asarray(trajectory.timestep.discount, np.float64).max(-1)
    lambdas = np.array([[td_lambda, 0.0], [td_lambda, td_lambda]])
    expected = np.zeros((2, 2))
    following = values[2]
    for t in (1, 0):
        expected[t] = reward[t + 1] + discount[t + 1] * (lambdas[t] * following + (1 - lambdas[t]) * values[t + 1])
        following = expected[t]
    np.testing.assert_allclose(got, expected, rtol=1e-5)


@pytest.mark.parametrize(
    "agent, env_name, kwargs, field",
    [
        ("qmix", "cued_coordination", {"global_state": False}, "agent.mixer"),
        ("vdn", "cued_coordination_teams", {}, "env.name"),
        ("pqn_vdn", "catch", {}, "env.name"),
    ],
)
def test_the_agents_and_environment_must_fit_before_anything_compiles(agent, env_name, kwargs, field):
    assert refused_field(agent, env_name, **kwargs) == field


def test_vdn_acts_for_every_agent_and_stores_each_agents_recurrent_state():
    config = get_config()
    config.agent = podracer.defaults("vdn").agent
    config.network.core, config.network.core_size = "gru", 8
    config.agent.update({"sequence_length": 2, "buffer_size": 64, "min_replay_size": 8})
    env = envs.make("cued_coordination")
    agent = agents.make(config, num_updates=10)
    state = agent.init(jax.random.key(0), env.observation_spec(), env.action_spec())
    _, timestep = jax.vmap(env.reset)(jax.random.split(jax.random.key(1), 4))
    recurrent = agent.initial_state(4)
    action, extras, _ = agent.act(
        agent.acting_params(state), timestep, recurrent, jax.random.split(jax.random.key(2), 4)
    )
    assert action.shape == (4, 2) and extras["q_values"].shape == (4, 2, 4)
    assert jax.tree.leaves(extras)[-1].shape == (4, 2, 8) == jax.tree.leaves(recurrent)[0].shape


@pytest.mark.parametrize(
    "name",
    ["anakin_mpe_spread_independent_q", "anakin_mpe_spread_vdn", "anakin_mpe_spread_qmix", "anakin_smax_3m_qmix"],
)
def test_each_shipped_config_mixes_as_its_agent_is_named(name):
    """The configs on VDN's experiment (`config.loading.with_experiment_of`) keep their own agent's mixer."""
    agent = load_config(name).agent
    assert agent.mixer == {"independent_q": "none", "vdn": "vdn", "qmix": "qmix"}[agent.name]
