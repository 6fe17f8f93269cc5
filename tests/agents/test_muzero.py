"""MuZero: the unrolled loss against NumPy, the search on a hand-built model, acting per environment."""

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs
from ml_collections import ConfigDict

from podracer.agents.algorithms import muzero, search
from podracer.agents.learning import replay
from podracer.agents.models import muzero_model, support
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.models.networks import NetworkParams
from podracer.agents.trajectory import Trajectory
from podracer.config import settings
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep
from tests.agents.test_support import np_two_hot
from tests.references import np_log_softmax

K, N, S, A, SUPPORT = 2, 2, 4, 3, 3  # Unroll steps, n-step, sequences, actions, support size.
L = K + N + 2  # Timesteps per sampled sequence.

# [L, S]: no end; a termination at item 2; a truncation at item 1; the first item already LAST.
STEP_TYPE = np.array(
    [
        [FIRST, MID, MID, LAST],
        [MID, MID, LAST, FIRST],
        [MID, LAST, FIRST, MID],
        [MID, FIRST, MID, MID],
        [MID, MID, MID, MID],
        [MID, MID, MID, MID],
    ],
    np.int32,
)
DISCOUNT = np.ones((L, S), np.float32)
DISCOUNT[2, 1] = 0.0


def agent_config(**fields) -> ConfigDict:
    """MuZero's `config.agent` at its defaults, but the small unroll and support of these tests and `fields`."""
    config = muzero.defaults()
    config.update({"gamma": 0.9, "n_step": N, "unroll_steps": K, "support_size": SUPPORT, "value_cost": 0.5})
    config.update(fields)
    return config


def loss_settings(**fields) -> muzero.LossSettings:
    """`agent_config(**fields)` as MuZero's targets and loss read it."""
    return settings.read(muzero.LossSettings, agent_config(**fields))


def tiny_model_params(seed=0) -> NetworkParams:
    network = NetworkSettings(
        torso="mlp", hidden_sizes=(5,), activation="relu", hidden_size=3, channels=(), num_blocks=0
    )
    observation_spec = specs.Array((2,), np.float32)
    model = muzero_model.make_model(network, observation_spec, specs.DiscreteArray(A), SUPPORT)
    return muzero_model.init(jax.random.key(seed), model, observation_spec)


def sample(seed=0) -> replay.Sample:
    rng = np.random.default_rng(seed)
    policies = rng.dirichlet(np.ones(A), size=(L - 1, S)).astype(np.float32)
    trajectory = Trajectory(
        timestep=TimeStep(
            step_type=jnp.asarray(STEP_TYPE),
            reward=jnp.asarray(rng.normal(size=(L, S)) * 3, jnp.float32),
            discount=jnp.asarray(DISCOUNT),
            observation=jnp.asarray(rng.normal(size=(L, S, 2)), jnp.float32),
        ),
        action=jnp.asarray(rng.integers(0, A, size=(L - 1, S)), jnp.int32),
        extras={
            "search_policy": jnp.asarray(policies),
            "root_value": jnp.asarray(rng.normal(size=(L - 1, S)) * 5, jnp.float32),
        },
    )
    return replay.Sample(trajectory, jnp.zeros(S, jnp.int32), jnp.asarray(rng.uniform(0.2, 1.0, S), jnp.float32))


def np_value_target(step_type, reward, discount, root_value, start, gamma, n):
    """z_start: n rewards (fewer where the episode ends), then gamma^k times the discounts times the stored root value."""
    total, scale = 0.0, 1.0
    for t in range(start + 1, start + n + 1):
        total += scale * reward[t]
        scale *= gamma * discount[t]
        if step_type[t] == LAST or t == start + n:
            return total + scale * root_value[t]


def np_loss(params, drawn, config):
    """Schrittwieser et al. (2020), eq. 1, term by term, from the model's outputs along the sampled actions."""
    tr = jax.tree.map(np.asarray, drawn.trajectory)
    ts = tr.timestep
    represent, predict, dynamics = (
        jax.jit(f) for f in (muzero_model.represent, muzero_model.predict, muzero_model.dynamics)
    )
    totals = []
    for s in range(S):
        observation = jnp.asarray(ts.observation[0, s : s + 1])
        latent = represent(params, observation)
        total = 0.0
        for k in range(K + 1):
            in_episode = all(ts.step_type[m, s] != LAST for m in range(k + 1))
            weight = 1.0 if k == 0 else 1.0 / K
            policy_logits, value_logits = (np.asarray(x[0], np.float64) for x in predict(params, latent))
            if in_episode:
                z = np_value_target(
                    ts.step_type[:, s], ts.reward[:, s], ts.discount[:, s], tr.extras["root_value"][:, s], k, 0.9, N
                )
                policy_ce = -np.sum(tr.extras["search_policy"][k, s] * np_log_softmax(policy_logits))
                value_ce = -np.sum(np_two_hot(z, SUPPORT) * np_log_softmax(value_logits))
                total += weight * (policy_ce + config.value_cost * value_ce)
            if k < K:
                latent, reward_logits = dynamics(params, latent, jnp.asarray(tr.action[k, s : s + 1]))
                if in_episode:
                    reward_ce = -np.sum(np_two_hot(ts.reward[k + 1, s], SUPPORT) * np_log_softmax(reward_logits[0]))
                    total += (1.0 / K) * reward_ce
        totals.append(total)
    return np.mean(np.asarray(drawn.weights, np.float64) * np.array(totals)), np.array(totals)


@functools.cache
def loss_and_grad(value_bootstrap: str):
    """`(params, sample) -> ((loss, aux), gradient)` under `agent_config(value_bootstrap=...)`, jitted once a
    process: the loss test and the model-bootstrap test share its compiled program (the same shapes)."""
    config = loss_settings(value_bootstrap=value_bootstrap)
    return jax.jit(jax.value_and_grad(lambda params, drawn: muzero.loss(params, drawn, config), has_aux=True))


@pytest.mark.slow  # The per-sequence NumPy loop calls the model (jitted) step by step.
def test_unrolled_loss_matches_the_numpy_sum_over_steps():
    """One random draw: `STEP_TYPE` holds every case (no end, termination, truncation, a LAST first item)."""
    params, drawn = tiny_model_params(0), sample(0)
    expected, per_sequence = np_loss(params, drawn, agent_config())
    (total, (metrics, priorities)), gradients = loss_and_grad("search")(params, drawn)
    np.testing.assert_allclose(total, expected, rtol=1e-5)
    assert per_sequence[3] == 0.0 and priorities[3] == 0.0  # A sequence starting at a LAST step teaches nothing.
    assert np.all(np.asarray(priorities)[:3] > 0)
    assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(gradients))


def assert_values_match_numpy(got: muzero.Targets, trajectory: Trajectory, root_value: np.ndarray) -> None:
    """Every in-episode value target equals `np_value_target` bootstrapped from `root_value` `[L - 1, S]`."""
    ts = jax.tree.map(np.asarray, trajectory.timestep)
    for s in range(S):
        for k in range(K + 1):
            expected = np_value_target(
                ts.step_type[:, s], ts.reward[:, s], ts.discount[:, s], root_value[:, s], k, 0.9, N
            )
            if got.in_episode[k, s]:
                np.testing.assert_allclose(got.values[k, s], expected, rtol=1e-5, atol=1e-5)


def test_value_targets_bootstrap_from_stored_root_values_and_stop_at_episode_ends():
    drawn = sample(3)
    got = jax.jit(lambda trajectory: muzero.targets(trajectory, loss_settings()))(drawn.trajectory)
    assert_values_match_numpy(got, drawn.trajectory, np.asarray(drawn.trajectory.extras["root_value"]))
    np.testing.assert_array_equal(
        got.in_episode, [[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]]
    )  # Column 1 ends at item 2 (LAST), column 2 at item 1, column 3 starts LAST.


def test_value_targets_bootstrap_from_given_values_at_steps_n_to_n_plus_k():
    drawn = sample(4)
    bootstrap = np.asarray(np.random.default_rng(0).normal(size=(K + 1, S)) * 5, np.float32)
    got = jax.jit(lambda trajectory, values: muzero.targets(trajectory, loss_settings(), values))(
        drawn.trajectory, jnp.asarray(bootstrap)
    )
    root_value = np.array(drawn.trajectory.extras["root_value"])
    root_value[N : N + K + 1] = bootstrap
    assert_values_match_numpy(got, drawn.trajectory, root_value)


@pytest.mark.slow  # Two learner steps of the model, about 12 s.
def test_model_bootstrap_takes_the_current_models_values_without_their_gradient():
    params, drawn = tiny_model_params(), sample(5)
    observations = drawn.trajectory.timestep.observation[N : N + K + 1].reshape(-1, 2)
    model_values = jax.jit(lambda p, o: support.to_scalar(muzero_model.predict(p, muzero_model.represent(p, o))[1]))(
        params, observations
    ).reshape(K + 1, S)
    # The same sample with the model's values stored as the search's: the loss and its gradient must match,
    # which they would not if the gradient flowed through the bootstrap values.
    stored = drawn.trajectory.extras["root_value"].at[N:].set(model_values)
    as_stored = drawn._replace(
        trajectory=drawn.trajectory.replace(extras={**drawn.trajectory.extras, "root_value": stored})
    )

    (model_loss, _), model_grad = loss_and_grad("model")(params, drawn)
    (search_loss, _), search_grad = loss_and_grad("search")(params, as_stored)
    (unchanged_loss, _), _ = loss_and_grad("search")(params, drawn)
    np.testing.assert_allclose(model_loss, search_loss, rtol=1e-5)
    assert abs(float(model_loss) - float(unchanged_loss)) > 1e-4  # The bootstrap does change the targets.
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6), model_grad, search_grad)


class ChainModel(nn.Module):
    """A deterministic toy model: the latent state counts steps; only action `GOOD` at the root pays 1, then nothing.

    Priors are uniform and every value is 0, so only search can find `GOOD`.
    """

    @nn.compact
    def __call__(self, observation, action):
        return self.predict(self.represent(observation))

    def represent(self, observation):
        return jnp.zeros((observation.shape[0], 1))

    def dynamics(self, latent, action):
        reward = jnp.where((latent[:, 0] == 0) & (action == GOOD), 1.0, 0.0)
        return latent + 1.0, jnp.log(support.to_categorical(reward, SUPPORT) + 1e-30)

    def predict(self, latent):
        zeros = jnp.zeros(latent.shape[0])
        return jnp.zeros((latent.shape[0], A)), jnp.log(support.to_categorical(zeros, SUPPORT) + 1e-30)


GOOD = 2


def chain_search(config: ConfigDict, params: NetworkParams, observation: jax.Array):
    """The search `config` names from the roots of `observation`, jitted whole: eager, mctx's loop and the ops
    around it dispatch (and compile) one by one, several times slower."""
    plan = search.search(settings.read(search.SearchSettings, config), gamma=0.9)
    return jax.jit(lambda p, o, key: plan(p, search.root(p, o), key))(params, observation, jax.random.key(0))


@pytest.mark.slow  # A search compiled.
def test_muzero_search_visits_the_rewarding_action_most_and_its_weights_are_the_visit_counts():
    """24 simulations (6 checked nothing more): once found, `GOOD` takes the visits; the others get one at most."""
    simulations = 24
    config = agent_config(num_simulations=simulations, dirichlet_fraction=0.0, temperature=1e-3)
    params = NetworkParams(ChainModel(), {})
    observation = jnp.zeros((2, 1))
    output = chain_search(config, params, observation)
    visits = np.asarray(output.search_tree.children_visits[:, 0])  # [B, A] at the root.
    assert np.all(visits.sum(-1) == simulations)  # mctx: every simulation passes through one root child.
    assert np.all(visits.argmax(-1) == GOOD) and np.all(output.action == GOOD)
    np.testing.assert_allclose(output.action_weights, visits / simulations, rtol=1e-6)  # The normalised counts.
    np.testing.assert_allclose(output.search_tree.summary().qvalues[:, GOOD], 1.0, rtol=1e-5)  # r + gamma * 0.
    assert np.all(visits[:, :GOOD] <= 1)  # Once found, the reward (Q 1 against 0) keeps pUCT on GOOD.


@pytest.mark.slow  # Compiles Gumbel MuZero's search.
def test_gumbel_search_picks_the_rewarding_action_and_halves_the_other_visits():
    simulations = 12
    config = agent_config(search="gumbel", num_simulations=simulations, gumbel_scale=0.0)
    params = NetworkParams(ChainModel(), {})
    output = chain_search(config, params, jnp.zeros((1, 1)))
    visits = np.asarray(output.search_tree.children_visits[0, 0])
    assert output.action[0] == GOOD and np.argmax(output.action_weights[0]) == GOOD
    assert visits.sum() == simulations
    # Sequential Halving over 3 actions with 12 simulations: 2 each in the first round, then the best two share the rest.
    assert visits[GOOD] == visits.max() and visits.min() == 2


@pytest.mark.slow  # Compiles a vmapped search, once: both batches have the same shape.
def test_each_environment_searches_alone_whatever_the_batch_beside_it():
    """Environment 1 keeps its observation and key while its two neighbours get others: its search is unchanged."""
    params = tiny_model_params(4)
    act = jax.jit(search.make_act(search.SearchSettings(num_simulations=5), gamma=0.9))
    rng = np.random.default_rng(0)
    observations = jnp.asarray(rng.normal(size=(3, 2)), jnp.float32)
    keys = jax.random.split(jax.random.key(1), 3)
    action, extras = act(params, observations, keys)
    beside = observations.at[jnp.array([0, 2])].set(jnp.asarray(rng.normal(size=(2, 2)) * 3, jnp.float32))
    other_keys = jax.random.split(jax.random.key(2), 3).at[1].set(keys[1])
    beside_action, beside_extras = act(params, beside, other_keys)
    assert action.shape == (3,) and extras["search_policy"].shape == (3, A) and extras["root_value"].shape == (3,)
    assert action[1] == beside_action[1]
    np.testing.assert_allclose(extras["search_policy"][1], beside_extras["search_policy"][1], rtol=1e-6)
    np.testing.assert_allclose(extras["root_value"][1], beside_extras["root_value"][1], rtol=1e-6)
    assert not np.allclose(
        np.asarray(extras["root_value"])[[0, 2]], np.asarray(beside_extras["root_value"])[[0, 2]]
    )  # The batch did change.
    np.testing.assert_allclose(extras["search_policy"].sum(-1), 1.0, rtol=1e-5)
