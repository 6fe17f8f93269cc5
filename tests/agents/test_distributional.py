"""C51's projection, the quantile Huber loss, n-step particle targets and Munchausen's terms against NumPy
references written from the papers, and the three agents' networks and losses end to end."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

from podracer.agents.algorithms import dqn
from podracer.agents.models import networks
from podracer.agents.trajectory import transitions
from podracer.agents.value_distributions import distribution_losses as losses
from podracer.agents.value_distributions import distributional_dqn
from podracer.agents.value_distributions.distribution_heads import DistributionalQNetwork, NoisyDense, cos_pi
from podracer.envs.timestep import LAST
from tests import references as ref
from tests.helpers import last_json_line, run_module


def np_projection(values, weights, v_min, v_max, num_atoms):
    """Bellemare et al. (2017), Algorithm 1, lines 7-10, one particle at a time, with the l == u case giving the
    particle's whole mass to its atom."""
    delta = (v_max - v_min) / (num_atoms - 1)
    m = np.zeros(num_atoms)
    for value, weight in zip(values, weights, strict=True):
        b = (min(max(value, v_min), v_max) - v_min) / delta
        lower, upper = int(np.floor(b)), int(np.ceil(b))
        if lower == upper:
            m[lower] += weight
        else:
            m[lower] += weight * (upper - b)
            m[upper] += weight * (b - lower)
    return m


def test_the_projection_splits_each_particle_between_its_two_atoms_and_clips_to_the_support():
    rng = np.random.default_rng(0)
    support = np.linspace(-2.0, 3.0, 11)
    values = np.concatenate([rng.uniform(-4.0, 5.0, (7, 20)), np.tile(support[[0, 4, 10]], (7, 1))], axis=1)
    weights = rng.dirichlet(np.ones(values.shape[1]), size=7)
    got = losses.categorical_projection(jnp.asarray(values, jnp.float32), jnp.asarray(weights, jnp.float32), support)
    for row in range(7):
        expected = np_projection(values[row], weights[row], -2.0, 3.0, 11)
        np.testing.assert_allclose(got[row], expected, atol=1e-5)
    np.testing.assert_allclose(np.sum(got, -1), 1.0, rtol=1e-5)


def np_quantile_huber(quantiles, taus, targets, weights, kappa):
    """Dabney et al. (2018a) eq. 10 with the weights of the targets: sum_i sum_j w_j rho^kappa_tau_i(T_j - theta_i)."""
    total = 0.0
    for theta, tau in zip(quantiles, taus, strict=True):
        for target, weight in zip(targets, weights, strict=True):
            u = target - theta
            if kappa == 0:
                magnitude = abs(u)
            else:
                magnitude = 0.5 * u * u / kappa if abs(u) <= kappa else abs(u) - 0.5 * kappa
            total += weight * abs(tau - (u < 0)) * magnitude
    return total


@pytest.mark.parametrize("kappa", [0.0, 1.0, 0.3])
def test_the_quantile_huber_loss_is_the_papers_double_sum(kappa):
    rng = np.random.default_rng(int(kappa * 10))
    quantiles, taus = rng.normal(size=(4, 6)), rng.uniform(size=(4, 6))
    targets, weights = rng.normal(size=(4, 9)) * 2, rng.dirichlet(np.ones(9), size=4)
    args = [jnp.asarray(x, jnp.float32) for x in (quantiles, taus, targets, weights)]
    got = losses.quantile_huber_loss(*args, kappa)
    expected = [np_quantile_huber(quantiles[i], taus[i], targets[i], weights[i], kappa) for i in range(4)]
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_the_quantile_loss_is_least_at_the_targets_quantiles():
    """With plain quantile regression (kappa 0), tau-quantiles of 1,000 targets minimise each term: the gradient
    of the loss with respect to theta_i vanishes there up to one sample's weight."""
    targets = jnp.asarray(np.random.default_rng(1).normal(size=1000), jnp.float32)
    taus = losses.quantile_midpoints(4)
    quantiles = jnp.quantile(targets, taus)
    grad = jax.grad(lambda q: losses.quantile_huber_loss(q, taus, targets, jnp.full(1000, 1e-3), 0.0))(quantiles)
    assert np.all(np.abs(grad) <= 2e-3), grad


def np_bootstrap_index(step_type, n, start):
    """The index the window from `start` bootstraps from: the n-th step, or the LAST one inside it."""
    for k in range(1, n + 1):
        if step_type[start + k] == LAST or k == n:
            return start + k


@pytest.mark.parametrize("n", [1, 2, 3])
def test_n_step_particles_shift_and_scale_the_bootstrap_states_particles(n):
    trajectory = ref.make_trajectory(seed=n)
    rng = np.random.default_rng(n)
    values = rng.normal(size=(ref.T + 1, ref.B, 4)).astype(np.float32)
    weights = rng.dirichlet(np.ones(4), size=(ref.T + 1, ref.B)).astype(np.float32)
    tr = transitions(trajectory, 0.9)
    got_values, got_weights = losses.n_step_particles(
        tr.rewards, tr.discounts, tr.lambdas(1.0), jnp.asarray(values), jnp.asarray(weights), n
    )
    ts = jax.tree.map(np.asarray, trajectory.timestep)
    for start in range(ref.T + 1 - n):
        for b in range(ref.B):
            k = np_bootstrap_index(ts.step_type[:, b], n, start)
            total, scale = 0.0, 1.0
            for step in range(start + 1, k + 1):
                total += scale * ts.reward[step, b]
                scale *= 0.9 * ts.discount[step, b]
            np.testing.assert_allclose(got_values[start, b], total + scale * values[k, b], rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(got_weights[start, b], weights[k, b])


def test_munchausen_targets_of_point_distributions_are_m_dqns():
    """Every action's quantiles all at q(s, a): the weighted mean of the one-step target particles is
    Vieillard et al. (2020) eq. 3, r + alpha tau clip(log pi(a|s), l0, 0) + gamma d sum_a' pi(a'|s')(q(s', a') -
    tau log pi(a'|s')), with pi = softmax(q / tau) of the target network."""
    trajectory = ref.make_trajectory(seed=4)
    rng = np.random.default_rng(4)
    q = rng.normal(size=(ref.T + 1, ref.B, ref.A)).astype(np.float32)
    outputs = jnp.repeat(jnp.asarray(q)[..., None], 5, axis=-1)
    target = distributional_dqn.ValueDistribution(jnp.asarray(q), outputs, None)
    settings = distributional_dqn.LossSettings("quantile", 0.9, 1, True, 0.0, 0, 1, 0.9, 5, True, 0.9, 0.5, -1.0)
    values, weights = distributional_dqn.target_particles(trajectory, target, target, settings)
    ts, action = jax.tree.map(np.asarray, trajectory.timestep), np.asarray(trajectory.action)
    for t in range(ref.T):
        for b in range(ref.B):
            log_pi = q[t, b] / 0.5 - np.log(np.sum(np.exp(q[t, b] / 0.5)))
            log_next = q[t + 1, b] / 0.5 - np.log(np.sum(np.exp(q[t + 1, b] / 0.5)))
            soft_value = np.sum(np.exp(log_next) * (q[t + 1, b] - 0.5 * log_next))
            bonus = 0.9 * 0.5 * np.clip(log_pi[action[t, b]], -1.0, 0.0)
            expected = ts.reward[t + 1, b] + bonus + 0.9 * ts.discount[t + 1, b] * soft_value
            np.testing.assert_allclose(np.sum(values[t, b] * weights[t, b]), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("double_q", [True, False])
def test_the_mean_of_the_quantile_targets_is_dqns_target(n, double_q):
    """By linearity, the targets' mean is the n-step double-Q target of the quantiles' means (`dqn.sequence_targets`,
    itself checked against NumPy in test_dqn.py)."""
    trajectory = ref.make_trajectory(seed=n)
    rng = np.random.default_rng(20 + n)
    online, target = (rng.normal(size=(ref.T + 1, ref.B, ref.A, 7)).astype(np.float32) for _ in range(2))
    as_distribution = lambda x: distributional_dqn.ValueDistribution(jnp.mean(x, -1), jnp.asarray(x), None)  # noqa: E731
    settings = distributional_dqn.LossSettings("quantile", 0.9, n, double_q, 0.0, 0, 1, 0.9, 7, False, 0.9, 0.03, -1)
    values, weights = distributional_dqn.target_particles(
        trajectory, as_distribution(online), as_distribution(target), settings
    )
    expected = dqn.sequence_targets(trajectory, jnp.mean(online, -1), jnp.mean(target, -1), 0.9, double_q, 0.0, n)
    np.testing.assert_allclose(jnp.sum(values * weights, -1), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # One fresh process with 8 devices: C51's gradient step compiled for 8 devices and for 1.
def test_eight_devices_take_c51s_gradient_steps_of_one():
    """A batch split over 8 devices against one device with all of it: 3 steps to the same parameters, target
    network and priorities (`tests/programs/distributional_devices.py`)."""
    result = run_module("distributional_devices", num_devices=8)
    assert result.returncode == 0, result.stderr
    summary = last_json_line(result.stdout)
    assert summary["steps"] == 3 and summary["changed"] > 1e-3, summary


def network(kind: str, dueling: bool = False, **head):
    module = networks.make_q_network(
        networks.NetworkSettings(hidden_sizes=(16,), activation="relu"),
        specs.Array((3,), np.float32),
        specs.DiscreteArray(4),
        module=DistributionalQNetwork,
        kind=kind,
        dueling=dueling,
        **head,
    )
    return networks.init_module(jax.random.key(0), module, specs.Array((3,), np.float32))


def outputs(params, observation, sampled: bool, key=None):
    features = distributional_dqn.features_unroll(params, (), observation, jnp.zeros(observation.shape[:2], bool))[1]
    return distributional_dqn.distribution(params, features, sampled, key)


@pytest.mark.parametrize("kind", ["categorical", "quantile", "implicit"])
def test_acting_reads_the_mean_of_each_actions_distribution(kind):
    """C51: sum_i z_i p_i on its support; QR-DQN: the mean quantile; IQN: the mean quantile at K midpoints."""
    params = network(kind, num_atoms=5, v_min=-2.0, v_max=6.0, acting_quantiles=8)
    observation = jnp.asarray(np.random.default_rng(0).normal(size=(2, 3, 3)), jnp.float32)
    _, q_values = params.unroll((), observation, jnp.zeros((2, 3), bool))
    distribution = outputs(params, observation, sampled=False)
    assert distribution.outputs.shape == (2, 3, 4, 8 if kind == "implicit" else 5)
    if kind == "categorical":
        probabilities = np.asarray(jax.nn.softmax(distribution.outputs, axis=-1), np.float64)
        expected = probabilities @ np.linspace(-2.0, 6.0, 5)
    else:
        expected = np.mean(np.asarray(distribution.outputs, np.float64), axis=-1)
        count = distribution.taus.shape[-1]
        np.testing.assert_allclose(distribution.taus[0, 0], (np.arange(count) + 0.5) / count, rtol=1e-6)
    np.testing.assert_allclose(q_values, expected, rtol=1e-5, atol=1e-6)


def test_iqn_samples_fractions_from_its_key_and_its_quantiles_are_a_function_of_them():
    params = network("implicit", num_atoms=6, acting_quantiles=4)
    observation = jnp.asarray(np.random.default_rng(1).normal(size=(1, 5, 3)), jnp.float32)
    first, again, other = (outputs(params, observation, True, jax.random.key(k)) for k in (1, 1, 2))
    np.testing.assert_array_equal(first.outputs, again.outputs)
    assert first.taus.shape == (1, 5, 6) and np.all((first.taus > 0) & (first.taus < 1))
    assert not np.allclose(first.taus, other.taus)
    np.testing.assert_allclose(outputs(params, observation, False).taus[0, 0], [0.125, 0.375, 0.625, 0.875])


def test_iqns_cosines_are_numpys_over_every_fraction_times_index_the_embedding_takes():
    """cos(pi x) for x = i tau, i < 64 and tau in [0, 1] (with negatives, whole and half numbers, where the
    reductions switch branches): within float32's rounding of NumPy's float64 cosine of the same float32 x."""
    x = np.concatenate([np.linspace(-3, 64, 200_001), np.arange(-4, 65, 0.5)]).astype(np.float32)
    expected = np.cos(np.pi * x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(jax.jit(cos_pi)(x)), expected, rtol=0, atol=3e-7)


def test_dueling_streams_give_each_atom_a_shared_value_and_advantages_that_average_to_zero():
    """Wang et al. (2016) eq. 9: the outputs less their mean over actions are the advantage stream less its mean,
    so their mean over actions is the value stream alone, whatever the advantages."""
    params = network("quantile", dueling=True, num_atoms=3)
    observation = jnp.asarray(np.random.default_rng(2).normal(size=(1, 4, 3)), jnp.float32)
    head = params.variables["params"]["head"]
    assert sorted(name for name in head if name.startswith("Dense")) == ["Dense_0", "Dense_1"]  # Advantage, value.
    zero_advantages = jax.tree.map(jnp.zeros_like, head["Dense_0"])
    variables = {"params": {**params.variables["params"], "head": {**head, "Dense_0": zero_advantages}}}
    flat = outputs(params.replace(variables=variables), observation, False).outputs  # V alone, every action alike.
    got = outputs(params, observation, False).outputs
    np.testing.assert_allclose(jnp.mean(got, axis=-2), flat[..., 0, :], rtol=1e-5, atol=1e-6)


def test_a_noisy_layer_is_the_papers_factorised_noise_with_a_draw_per_row():
    """Fortunato et al. (2018) eqs. 10-11 in NumPy, each row's weights mu + sigma * f(e_in) f(e_out)^T formed whole;
    no noise is the mean layer."""
    layer = NoisyDense(3, 1.0, sigma_zero=0.5)
    x = jnp.asarray(np.random.default_rng(3).normal(size=(2, 4, 5)), jnp.float32)
    keys = jax.random.split(jax.random.key(9), 8).reshape(2, 4)
    variables = layer.init(jax.random.key(0), x, keys)
    params = jax.tree.map(np.asarray, variables["params"])
    mu_w, mu_b = params["Dense_0"]["kernel"], params["Dense_0"]["bias"]
    np.testing.assert_allclose(params["sigma_kernel"], 0.5 / np.sqrt(5))
    got = layer.apply(variables, x, keys)
    f = lambda e: np.sign(e) * np.sqrt(np.abs(e))  # noqa: E731
    for row in np.ndindex(2, 4):
        e = f(np.asarray(jax.random.normal(keys[row], (8,))))
        e_in, e_out = e[:5], e[5:]
        weights = mu_w + params["sigma_kernel"] * np.outer(e_in, e_out)
        expected = np.asarray(x[row]) @ weights + mu_b + params["sigma_bias"] * e_out
        np.testing.assert_allclose(got[row], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.apply(variables, x, None), np.asarray(x) @ mu_w + mu_b, rtol=1e-5, atol=1e-5)
