"""The offline agents' losses against plain NumPy on small batches: BC's two, TD3+BC's and ReBRAC's, IQL's, CQL's.

The networks are the agents' own, applied by JAX; what is checked is the
loss each computes from their outputs, term by term, and that one `learn`
call of each agent moves its parameters from a sampled batch.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

import podracer
from podracer import agents
from podracer.agents.algorithms import off_policy, td3
from podracer.agents.models import continuous_networks as cn
from podracer.agents.offline_agents import bc, cql, iql, rebrac, td3_bc
from podracer.agents.trajectory import Trajectory
from podracer.envs.timestep import LAST, MID, TimeStep

S, D = 16, 2
OBSERVATION_SPEC = specs.Array((3,), np.float32)
ACTION_SPEC = specs.BoundedArray((D,), np.float32, minimum=-2.0, maximum=2.0)
rng = np.random.default_rng(0)
OBSERVATION = rng.normal(size=(S, 3)).astype(np.float32)
ACTION = rng.uniform(-2, 2, (S, D)).astype(np.float32)
UNIT_ACTION = ACTION / 2.0  # [-2, 2] mapped onto [-1, 1].


def model(module, *action_size):
    return cn.init_model(jax.random.key(1), module, OBSERVATION_SPEC, *action_size)


def actor():
    return model(cn.DeterministicActor(D, (-2.0,) * D, (2.0,) * D, (8,), "relu"))


def test_behaviour_cloning_regression_is_the_mean_squared_error_in_the_unit_box():
    mu = actor()
    loss, _ = bc.regression_loss(mu, OBSERVATION, ACTION)
    predicted = np.asarray(mu(OBSERVATION))
    np.testing.assert_allclose(loss, np.mean((predicted - UNIT_ACTION) ** 2), rtol=1e-6)


def test_behaviour_cloning_cross_entropy_is_the_mean_negative_log_likelihood():
    config = podracer.defaults("bc")
    agent = agents.make(config, num_updates=1)
    state = agent.init(jax.random.key(0), OBSERVATION_SPEC, specs.DiscreteArray(5))
    actions = rng.integers(0, 5, S).astype(np.int32)
    loss, metrics = bc.cross_entropy_loss(state.params, OBSERVATION, actions)
    logits = np.asarray(state.params.step((), OBSERVATION)[1], np.float64)
    log_probs = (
        logits
        - np.log(np.sum(np.exp(logits - logits.max(-1, keepdims=True)), -1, keepdims=True))
        - logits.max(-1, keepdims=True)
    )
    np.testing.assert_allclose(loss, -np.mean(log_probs[np.arange(S), actions]), rtol=1e-5)
    np.testing.assert_allclose(metrics["accuracy"], np.mean(logits.argmax(-1) == actions))


def test_td3_bc_actor_loss_weighs_q_by_alpha_over_its_mean_magnitude_against_cloning():
    """-lambda mean Q_1(s, pi(s)) + mean (pi(s) - a)^2, lambda = alpha / mean |Q_1(s, pi(s))| (eq. 3)."""
    mu, critic = actor(), model(cn.TwinCritic((8,), "relu"), D)
    batch = off_policy.Batch(OBSERVATION, UNIT_ACTION, *(np.zeros(S),) * 2, OBSERVATION, np.ones(S), np.ones(S))
    loss, metrics = td3_bc.actor_loss(2.5)(mu, batch, critic, None)
    pi = np.asarray(mu(OBSERVATION))
    q = np.asarray(critic(OBSERVATION, pi))[:, 0]
    lambda_ = 2.5 / np.mean(np.abs(q))
    np.testing.assert_allclose(metrics["lambda"], lambda_, rtol=1e-5)
    np.testing.assert_allclose(metrics["bc_loss"], np.mean((pi - UNIT_ACTION) ** 2), rtol=1e-5)
    np.testing.assert_allclose(loss, -lambda_ * np.mean(q) + np.mean((pi - UNIT_ACTION) ** 2), rtol=1e-5)
    grads = jax.grad(lambda a: td3_bc.actor_loss(2.5)(a, batch, critic, None)[0])(mu)
    assert any(np.any(np.asarray(g) != 0) for g in jax.tree.leaves(grads))  # Through Q and the cloning term.


def test_iql_expectile_loss_by_hand():
    """|tau - 1(u < 0)| u^2 at tau 0.7: u = -2 weighs 0.3, u = 0.5 weighs 0.7."""
    np.testing.assert_allclose(iql.expectile_loss(jnp.array([-2.0, 0.5, 0.0]), 0.7), [1.2, 0.175, 0.0], rtol=1e-6)


def test_iql_value_policy_and_critic_losses_match_numpy():
    value, gaussian = model(cn.StateValue((8,), "relu")), model(cn.GaussianActor(D, (-2.0,) * D, (2.0,) * D, (8,)))
    critic = model(cn.TwinCritic((8,), "relu"), D)
    target_q = rng.normal(size=S).astype(np.float32)
    v = np.asarray(value(OBSERVATION))
    u = target_q - v
    expected = np.mean(np.abs(0.7 - (u < 0)) * u**2)
    np.testing.assert_allclose(iql.value_loss(value, OBSERVATION, target_q, 0.7)[0], expected, rtol=1e-5)

    advantage = rng.normal(size=S).astype(np.float32) * 3
    outputs = gaussian(OBSERVATION)
    mean, log_std = np.tanh(np.asarray(outputs["mean"])), np.asarray(outputs["log_std"])
    log_prob = np.sum(-0.5 * ((UNIT_ACTION - mean) / np.exp(log_std)) ** 2 - log_std - 0.5 * np.log(2 * np.pi), -1)
    weights = np.minimum(np.exp(3.0 * advantage), 100.0)
    loss, metrics = iql.awr_loss(gaussian, OBSERVATION, UNIT_ACTION, advantage, 3.0)
    np.testing.assert_allclose(loss, -np.mean(weights * log_prob), rtol=1e-5)
    assert metrics["mean_weight"] <= 100.0 and np.max(weights) == 100.0  # The clip acts on this batch.

    reward, discount, next_v = (rng.normal(size=S).astype(np.float32) for _ in range(3))
    batch = off_policy.Batch(OBSERVATION, UNIT_ACTION, reward, discount, OBSERVATION, np.ones(S), np.ones(S))
    q = np.asarray(critic(OBSERVATION, UNIT_ACTION))
    y = reward + discount * next_v
    expected = np.mean(0.5 * np.sum((q - y[:, None]) ** 2, -1))
    np.testing.assert_allclose(iql.critic_loss(critic, batch, next_v)[0], expected, rtol=1e-5)


@pytest.mark.parametrize("name", ["bc", "td3_bc", "iql", "rebrac", "cql"])
def test_one_learn_call_on_a_sampled_batch_moves_the_parameters(name):
    """A batch as the program samples it: two timesteps, the second LAST where the episode ended, and the dataset's
    next actions."""
    config = podracer.defaults(name)
    config.network.hidden_sizes = (8,)
    config.offline.dataset = "a dataset"  # IQL and ReBRAC, which also learn online, learn from batches with one.
    agent = agents.make(config, num_updates=4)
    state = agent.init(jax.random.key(0), OBSERVATION_SPEC, ACTION_SPEC)
    ended = np.arange(S) % 4 == 0
    batch = Trajectory(
        timestep=TimeStep(
            step_type=jnp.stack([jnp.full(S, MID), jnp.where(ended, LAST, MID)]),
            reward=jnp.stack([jnp.zeros(S), jnp.ones(S)]),
            discount=jnp.stack([jnp.ones(S), jnp.where(ended, 0.0, 1.0)]),
            observation=jnp.stack([OBSERVATION, OBSERVATION + 1]),
        ),
        action=jnp.asarray(ACTION)[None],
        extras={"next_action": jnp.asarray(ACTION[::-1])[None]},
    )
    learned, metrics = jax.jit(agent.learn)(state, batch, jax.random.key(1))
    changed = [not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(learned), strict=True)]
    assert any(changed) and all(np.isfinite(value) for value in jax.tree.leaves(metrics))


def test_rebrac_actor_loss_and_critic_penalty_match_numpy():
    """Actor: mean(beta_1 |pi(s) - a|^2 - lambda min_i Q_i(s, pi(s))), lambda = 1 / mean |min_i Q_i|; critic target:
    min_i Q'_i(s', a') - beta_2 |a' - a'_D|^2 (Tarasov et al. 2023, eq. 3)."""
    mu, critic = actor(), model(cn.TwinCritic((8,), "relu"), D)
    next_action = rng.uniform(-1, 1, (S, D)).astype(np.float32)
    batch = off_policy.Batch(
        OBSERVATION, UNIT_ACTION, *(np.zeros(S),) * 2, OBSERVATION, np.ones(S), np.ones(S), next_action
    )
    loss, _ = rebrac.actor_loss(0.3)(mu, batch, critic, None)
    pi = np.asarray(mu(OBSERVATION))
    q = np.min(np.asarray(critic(OBSERVATION, pi)), -1)
    expected = np.mean(0.3 * np.sum((pi - UNIT_ACTION) ** 2, -1) - q / np.mean(np.abs(q)))
    np.testing.assert_allclose(loss, expected, rtol=1e-5)

    config = podracer.defaults("rebrac")
    config.network.hidden_sizes = (8,)
    state = agents.make(config, num_updates=1).init(jax.random.key(0), OBSERVATION_SPEC, ACTION_SPEC)
    key = jax.random.key(3)
    penalised = td3.next_value(state, batch, key, 0.2, 0.5, cloning_penalty=0.1)
    plain = td3.next_value(state, batch, key, 0.2, 0.5)
    target_mu = np.asarray(state.actor.params.replace(variables=state.own)(OBSERVATION))
    smoothed = np.clip(target_mu + np.clip(0.2 * np.asarray(jax.random.normal(key, target_mu.shape)), -0.5, 0.5), -1, 1)
    np.testing.assert_allclose(plain - penalised, 0.1 * np.sum((smoothed - next_action) ** 2, -1), rtol=1e-4, atol=1e-6)


def test_discrete_cql_loss_is_half_the_squared_double_q_error_plus_alpha_times_the_log_sum_exp_gap():
    config = podracer.defaults("cql")
    config.network.hidden_sizes = (8,)
    state = agents.make(config, num_updates=1).init(jax.random.key(0), OBSERVATION_SPEC, specs.DiscreteArray(3))
    target = state.params.replace(variables=jax.tree.map(lambda x: 1.3 * x, state.params.variables))
    actions = rng.integers(0, 3, S).astype(np.int32)
    ended = np.arange(S) % 3 == 0
    batch = Trajectory(
        timestep=TimeStep(
            step_type=jnp.stack([jnp.full(S, MID), jnp.where(ended, LAST, MID)]),
            reward=jnp.stack([jnp.zeros(S), jnp.asarray(rng.normal(size=S), jnp.float32)]),
            discount=jnp.stack([jnp.ones(S), jnp.where(ended, 0.0, 1.0)]),
            observation=jnp.stack([OBSERVATION, OBSERVATION[::-1]]),
        ),
        action=jnp.asarray(actions)[None],
        extras={},
    )
    loss, metrics = cql.discrete_loss(state.params, batch, target, alpha=2.0, gamma=0.9, double_q=True, reward_clip=0.0)
    q = np.asarray(state.params.step((), OBSERVATION)[1], np.float64)
    q_next, q_next_target = (np.asarray(p.step((), OBSERVATION[::-1])[1], np.float64) for p in (state.params, target))
    y = np.asarray(batch.timestep.reward[1]) + 0.9 * (~ended) * q_next_target[np.arange(S), q_next.argmax(-1)]
    chosen = q[np.arange(S), actions]
    log_sum_exp = np.log(np.sum(np.exp(q), -1))
    np.testing.assert_allclose(metrics["td_loss"], np.mean(0.5 * (y - chosen) ** 2), rtol=1e-5)
    np.testing.assert_allclose(loss, np.mean(0.5 * (y - chosen) ** 2) + 2.0 * np.mean(log_sum_exp - chosen), rtol=1e-5)


def test_continuous_cql_regulariser_matches_numpy_importance_sampling():
    """log(sum over uniform, pi(s) and pi(s') samples of exp(Q_i(s, a) - log density(a))) - Q_i(s, a_D), summed
    over the two critics and averaged over the batch; the uniform density is 2^-D."""
    gaussian = model(cn.GaussianActor(D, (-2.0,) * D, (2.0,) * D, (8,)))
    critic = model(cn.TwinCritic((8,), "relu"), D)
    next_observation = OBSERVATION[::-1].copy()
    batch = off_policy.Batch(OBSERVATION, UNIT_ACTION, *(np.zeros(S),) * 2, next_observation, np.ones(S), np.ones(S))
    key, samples = jax.random.key(4), 5
    gap = cql.continuous_regulariser(critic, batch, gaussian, key, samples)
    uniform_key, now_key, next_key = jax.random.split(key, 3)
    uniform = np.asarray(jax.random.uniform(uniform_key, (samples, S, D), minval=-1.0, maxval=1.0))
    terms = [np.stack([np.asarray(critic(OBSERVATION, a)) for a in uniform]) - D * np.log(0.5)]
    for observation, k in ((OBSERVATION, now_key), (next_observation, next_key)):
        outputs = jax.tree.map(np.asarray, gaussian(observation))
        noise = np.asarray(jax.random.normal(k, (samples, S, D)), np.float64)
        u = outputs["mean"] + np.exp(outputs["log_std"]) * noise
        log_normal = np.sum(-0.5 * noise**2 - outputs["log_std"] - 0.5 * np.log(2 * np.pi), -1)
        log_prob = log_normal - np.sum(np.log(1 - np.tanh(u) ** 2), -1)
        q = np.stack([np.asarray(critic(OBSERVATION, jnp.asarray(np.tanh(a), jnp.float32))) for a in u])
        terms.append(q - log_prob[..., None])
    weighted = np.concatenate(terms).astype(np.float64)
    log_sum_exp = np.log(np.sum(np.exp(weighted - weighted.max(0)), 0)) + weighted.max(0)
    expected = np.mean(np.sum(log_sum_exp - np.asarray(critic(OBSERVATION, UNIT_ACTION)), -1))
    np.testing.assert_allclose(gap, expected, rtol=1e-4)
