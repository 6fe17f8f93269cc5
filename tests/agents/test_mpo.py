"""MPO's and V-MPO's E-step and M-step losses (`em_losses`) against NumPy written from the papers, their duals'
direction of travel, V-MPO's top half over devices, and the agents' field checks.

Papers: Abdolmaleki et al. 2018, "Maximum a Posteriori Policy Optimisation" (eqs. 7-11), and its decoupled
Gaussian update (Abdolmaleki et al. 2018b, Section 4.2); Song et al. 2020, "V-MPO" (eqs. 3-5, 25-26).
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from dm_env import specs

import podracer
from podracer import agents
from podracer.agents.algorithms import off_policy
from podracer.agents.models import continuous_networks
from podracer.agents.policy_optimisation import em_losses, mpo, vmpo
from podracer.config.errors import ConfigError
from podracer.devices.topology import DEVICE_AXIS
from tests import references as ref
from tests.helpers import load_config

N, S, D = 6, 5, 2
OBSERVATION_SPEC = specs.Array((3,), np.float32)


def np_softplus(x):
    return np.log1p(np.exp(x))


def np_sampled_e_step(q, eta, epsilon, valid):
    """MPO eq. 8: q_j = softmax_j(Q_j / eta) per state; eq. 9: g = eta eps + eta mean_s log (1/N) sum_j exp(Q_j/eta);
    and dg/deta = eps + mean_s [log mean_j exp(Q_j / eta) - sum_j q_j Q_j / eta] = eps - mean_s KL(q || uniform)."""
    q = np.asarray(q, np.float64)
    scaled = q / eta
    weights = np.exp(scaled - scaled.max(0)) / np.exp(scaled - scaled.max(0)).sum(0)
    log_mean_exp = np.log(np.mean(np.exp(scaled), axis=0))
    mean = lambda x: np.sum(valid * x) / np.sum(valid)  # noqa: E731
    loss = eta * epsilon + eta * mean(log_mean_exp)
    kl = np.sum(weights * np.log(q.shape[0] * weights), axis=0)
    return weights, loss, epsilon - mean(kl), mean(kl)


def test_sampled_e_step_weights_dual_and_its_derivative_match_numpy():
    rng = np.random.default_rng(0)
    q = rng.normal(scale=3.0, size=(N, S)).astype(np.float32)
    valid = np.array([1, 1, 0, 1, 1], np.float32)
    eta, epsilon = 1.7, 0.1
    weights, loss, metrics = em_losses.sampled_e_step(q, jnp.float32(eta), epsilon, valid)
    np_weights, np_loss, np_grad, np_kl = np_sampled_e_step(q, eta, epsilon, valid)
    ref.close(weights, np_weights)
    ref.close(loss, np_loss)
    ref.close(metrics["kl_e_step"], np_kl)
    grad = jax.grad(lambda t: em_losses.sampled_e_step(q, t, epsilon, valid)[1])(jnp.float32(eta))
    ref.close(grad, np_grad, rtol=1e-4)
    assert np.all(np.asarray(jax.grad(lambda x: em_losses.sampled_e_step(x, 1.0, 0.1, valid)[1])(q)) == 0)


def np_top_half(advantages, valid):
    """V-MPO Section 4.1: the ceil(n / 2) highest advantages of the n valid samples."""
    flat, ok = advantages.reshape(-1), valid.reshape(-1) > 0
    order = np.argsort(-np.where(ok, flat, -np.inf), kind="stable")
    keep = np.zeros_like(flat)
    keep[order[: (int(ok.sum()) + 1) // 2]] = 1.0
    return keep.reshape(advantages.shape)


def np_top_half_e_step(advantages, valid, eta, epsilon):
    """V-MPO eq. 4: psi = exp(A / eta) / sum_{D~} exp(A / eta) on the selected D~; eq. 5:
    L_eta = eta eps + eta log((1 / |D~|) sum_{D~} exp(A / eta))."""
    advantages = np.asarray(advantages, np.float64)
    keep = np_top_half(advantages, valid)
    exp = keep * np.exp(advantages / eta)
    return exp / exp.sum(), eta * epsilon + eta * np.log(exp.sum() / keep.sum()), keep


def test_top_half_e_step_matches_numpy():
    rng = np.random.default_rng(1)
    advantages = rng.normal(size=(7, 4)).astype(np.float32)
    valid = (rng.random((7, 4)) > 0.2).astype(np.float32)
    weights, loss, metrics = em_losses.top_half_e_step(advantages, valid, jnp.float32(0.8), 0.01)
    np_weights, np_loss, keep = np_top_half_e_step(advantages, valid, 0.8, 0.01)
    assert keep.sum() == (valid.sum() + 1) // 2 and np.all(keep <= valid)
    ref.close(em_losses.top_half(advantages, valid), keep)
    ref.close(weights, np_weights)
    ref.close(loss, np_loss)
    assert metrics["selected"] == keep.sum()


def test_top_half_is_taken_over_every_devices_shard_together():
    """Two devices holding half the batch each select, weigh and lose what one device holding it all does."""
    rng = np.random.default_rng(2)
    advantages = rng.normal(size=(2, 6, 3)).astype(np.float32)  # [devices, T, B / devices]
    valid = (rng.random((2, 6, 3)) > 0.2).astype(np.float32)

    def step(a, v):
        return em_losses.top_half_e_step(a, v, jnp.float32(0.5), 0.01, DEVICE_AXIS)[:2]

    weights, loss = ref.on_devices(step, advantages, valid, num_devices=2)
    whole = np.concatenate(list(advantages), axis=1), np.concatenate(list(valid), axis=1)
    np_weights, np_loss, _ = np_top_half_e_step(*whole, 0.5, 0.01)
    ref.close(np.concatenate(list(weights), axis=1), np_weights)
    ref.close(loss, [np_loss, np_loss])


def test_kl_constraint_penalty_multiplier_loss_and_gradients():
    """L_alpha = alpha (eps - sg KL) + sg(alpha) KL (V-MPO eq. 5): d/d alpha = eps - KL, d/d KL = alpha."""
    kl, alpha, epsilon = jnp.float32(0.03), jnp.float32(2.0), 0.01
    penalty, alpha_loss = em_losses.kl_constraint(kl, alpha, epsilon)
    ref.close(penalty, 2.0 * 0.03)
    ref.close(alpha_loss, 2.0 * (0.01 - 0.03))
    d_alpha, d_kl = jax.grad(lambda a, k: sum(em_losses.kl_constraint(k, a, epsilon)), argnums=(0, 1))(alpha, kl)
    ref.close(d_alpha, epsilon - 0.03)
    ref.close(d_kl, 2.0)


def np_diagonal_gaussian_kl(mean_p, std_p, mean_q, std_q):
    """KL(N(mean_p, std_p) || N(mean_q, std_q)) of diagonal Gaussians, summed over the last axis."""
    terms = np.log(std_q / std_p) + (std_p**2 + (mean_p - mean_q) ** 2) / (2 * std_q**2) - 0.5
    return np.sum(terms, axis=-1)


def test_kls_match_numpy():
    rng = np.random.default_rng(3)
    old = {"mean": rng.normal(size=(S, D)), "log_std": rng.normal(scale=0.3, size=(S, D))}
    new = {"mean": rng.normal(size=(S, D)), "log_std": rng.normal(scale=0.3, size=(S, D))}
    old32, new32 = (jax.tree.map(np.float32, g) for g in (old, new))
    std_old, std_new = np.exp(old["log_std"]), np.exp(new["log_std"])
    ref.close(
        em_losses.gaussian_kl_mean(old32, new32), np_diagonal_gaussian_kl(old["mean"], std_old, new["mean"], std_old)
    )
    ref.close(
        em_losses.gaussian_kl_stddev(old32, new32), np_diagonal_gaussian_kl(old["mean"], std_old, old["mean"], std_new)
    )
    mean_only, stddev_only = em_losses.decoupled(old32, new32)
    ref.close(mean_only["log_std"], old["log_std"])
    ref.close(stddev_only["mean"], old["mean"])
    logits_old, logits_new = rng.normal(size=(S, 4)), rng.normal(size=(S, 4))
    p, q = (np.exp(x) / np.exp(x).sum(-1, keepdims=True) for x in (logits_old, logits_new))
    ref.close(em_losses.categorical_kl(np.float32(logits_old), np.float32(logits_new)), np.sum(p * np.log(p / q), -1))


def test_dual_parameterisation_is_softplus():
    ref.close(em_losses.dual_value(jnp.float32(0.3)), np_softplus(0.3) + 1e-8)
    for value in (0.01, 1.0, 10.0):
        ref.close(em_losses.dual_value(em_losses.dual_param(value)), value, rtol=1e-4)


def test_temperature_grows_while_the_weights_kl_exceeds_epsilon_and_settles_where_it_equals_it():
    """Minimising the dual moves eta up while KL(q || pi) > epsilon (weights too peaked) and down while below; at its
    minimum the KL equals epsilon (MPO eq. 9's condition)."""
    q = np.random.default_rng(4).normal(scale=5.0, size=(N, S)).astype(np.float32)
    valid = np.ones(S, np.float32)
    epsilon = 0.1

    def dual(param):
        return em_losses.sampled_e_step(q, em_losses.dual_value(param), epsilon, valid)

    optimizer = optax.adam(0.05)
    param = em_losses.dual_param(0.5)
    _, _, start = dual(param)
    assert start["kl_e_step"] > epsilon

    def step(carry, _):
        param, state = carry
        updates, state = optimizer.update(jax.grad(lambda x: dual(x)[1])(param), state, param)
        return (optax.apply_updates(param, updates), state), None

    (param, _), _ = jax.lax.scan(step, (param, optimizer.init(param)), length=2500)
    _, _, end = dual(param)
    assert end["temperature"] > 5.0
    ref.close(end["kl_e_step"], epsilon, atol=2e-3)
    grad_low = jax.grad(lambda x: dual(x)[1])(em_losses.dual_param(100.0))  # Nearly uniform weights: KL < epsilon.
    assert grad_low > 0


def test_alpha_grows_while_the_kl_exceeds_epsilon_and_shrinks_below():
    def grad(kl):
        return jax.grad(lambda p: em_losses.kl_constraint(jnp.float32(kl), em_losses.dual_value(p), 0.01)[1])(0.0)

    assert grad(0.05) < 0 < grad(0.001)  # Gradient descent: alpha up above epsilon, down below it.


def np_vmpo_loss(params, target_params, trajectory, duals, settings):
    """V-MPO's eq. 1 on the shared 5 x 3 trajectory (`tests/references.py`), categorical: V-trace targets (lambda 1,
    clips 1) G, advantages G - V, the top half's psi (eq. 4), L_pi (eq. 3), L_eta and L_alpha (eq. 5), L_V (eq. 6)."""
    obs = np.asarray(trajectory.timestep.observation)
    logits, values = ref.np_apply(params, obs)
    old_logits, _ = ref.np_apply(target_params, obs)
    rewards, discounts, valid, lambdas = ref.np_transitions(trajectory, settings.gamma, 1.0)
    action = np.asarray(trajectory.action)
    log_pi = np.take_along_axis(ref.np_log_softmax(logits[:-1]), action[..., None], -1)[..., 0]
    log_mu = np.take_along_axis(
        ref.np_log_softmax(np.asarray(trajectory.extras["logits"], np.float64)), action[..., None], -1
    )[..., 0]
    vs, _ = ref.np_vtrace_recursive(rewards, discounts, values, log_pi - log_mu, lambdas, 1.0, 1.0, 1.0)
    eta, alpha = np_softplus(duals["temperature"]) + 1e-8, np_softplus(duals["alpha"]) + 1e-8
    psi, temperature_loss, _ = np_top_half_e_step(vs - values[:-1], valid, eta, settings.epsilon_temperature)
    p_old, log_p_old = np.exp(ref.np_log_softmax(old_logits[:-1])), ref.np_log_softmax(old_logits[:-1])
    kl = np.mean(valid * np.sum(p_old * (log_p_old - ref.np_log_softmax(logits[:-1])), -1))
    value_loss = np.mean(valid * 0.5 * (vs - values[:-1]) ** 2)
    kl_terms = alpha * kl + alpha * (settings.epsilon_alpha - kl)
    total = -np.sum(psi * log_pi) + temperature_loss + kl_terms + settings.value_cost * value_loss
    return total, kl, vs - values[:-1], valid


def test_vmpo_loss_matches_numpy_and_its_duals_gradients_are_the_papers():
    """The whole loss against NumPy; dL/d(alpha's parameter) = softplus'(x) (epsilon_alpha - KL), and
    dL/d(eta's parameter) = softplus'(x) dL_eta/d eta: the duals see only their own losses."""
    settings = vmpo.LossSettings(0.9, 0.5, 0.0, 0.05, 0.01, 0.01, 5e-5)
    params, target_params, trajectory = ref.make_params(0), ref.make_params(1), ref.make_trajectory(0)
    duals = {"temperature": jnp.float32(0.4), "alpha": jnp.float32(1.5)}

    def loss(trainable):
        return vmpo.loss(trainable, trajectory, target_params, settings, unroll_fn=ref.unroll_fn)

    (total, metrics), (_, dual_grads) = jax.value_and_grad(loss, has_aux=True)((params, duals))
    np_total, np_kl, advantages, valid = np_vmpo_loss(
        params, target_params, trajectory, {k: float(v) for k, v in duals.items()}, settings
    )
    ref.close(total, np_total, rtol=1e-4)
    ref.close(metrics["alpha_kl"], np_kl, rtol=1e-4)
    sigmoid = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731  softplus'
    ref.close(dual_grads["alpha"], sigmoid(1.5) * (settings.epsilon_alpha - np_kl), rtol=1e-4, atol=1e-6)
    eta = np_softplus(0.4) + 1e-8
    psi, _, keep = np_top_half_e_step(advantages, valid, eta, settings.epsilon_temperature)
    mean_exp = np.sum(keep * np.exp(advantages / eta)) / keep.sum()
    d_eta = settings.epsilon_temperature + np.log(mean_exp) - np.sum(psi * advantages) / eta  # dL_eta / d eta.
    ref.close(dual_grads["temperature"], sigmoid(0.4) * d_eta, rtol=1e-4, atol=1e-6)


def np_gaussian_log_prob(x, mean, std):
    return np.sum(-0.5 * ((x - mean) / std) ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi), axis=-1)


def test_mpo_decoupled_m_step_matches_numpy():
    """MPO's actor objective (Abdolmaleki et al. 2018b, Section 4.2): g(eta) + the weighted log-likelihoods of the
    sampled actions under (online mean, target deviation) and (target mean, online deviation), each KL bound's
    penalty and multiplier loss."""
    rng = np.random.default_rng(5)
    actor_module = continuous_networks.GaussianActor(D, (-1.0,) * D, (1.0,) * D, hidden_sizes=(8,))
    actor = continuous_networks.init_model(jax.random.key(1), actor_module, OBSERVATION_SPEC)
    observation = rng.normal(size=(S, 3)).astype(np.float32)
    old = {"mean": rng.normal(size=(S, D)).astype(np.float32), "log_std": rng.normal(0, 0.2, (S, D)).astype(np.float32)}
    actions = rng.normal(size=(N, S, D)).astype(np.float32)
    q_values = rng.normal(scale=2.0, size=(N, S)).astype(np.float32)
    valid = np.array([1, 1, 1, 0, 1], np.float32)
    batch = off_policy.Batch(observation, actions[0], valid, valid, observation, valid, np.ones(S, np.float32))
    duals = {"temperature": jnp.float32(0.2), "alpha_mean": jnp.float32(1.0), "alpha_stddev": jnp.float32(2.0)}
    settings = mpo.StepSettings(N, 0.1, 0.01, 1e-3)
    total, _ = mpo.policy_loss((actor, duals), batch, old, actions, q_values, settings)

    online = jax.tree.map(lambda x: np.asarray(x, np.float64), actor(observation))
    eta = np_softplus(0.2) + 1e-8
    weights, np_total, _, _ = np_sampled_e_step(q_values, eta, 0.1, valid)
    mean = lambda x: np.sum(valid * x) / np.sum(valid)  # noqa: E731
    std_old, std_new = np.exp(old["log_std"]), np.exp(online["log_std"])
    parts = {
        "mean": (np_gaussian_log_prob(actions, online["mean"], std_old), old["mean"], std_old, online["mean"], std_old),
        "stddev": (np_gaussian_log_prob(actions, old["mean"], std_new), old["mean"], std_old, old["mean"], std_new),
    }
    for (log_likelihood, *gaussians), alpha_param, epsilon in zip(
        parts.values(), (1.0, 2.0), (0.01, 1e-3), strict=True
    ):
        alpha, kl = np_softplus(alpha_param) + 1e-8, mean(np_diagonal_gaussian_kl(*gaussians))
        np_total += -mean(np.sum(weights * log_likelihood, axis=0)) + alpha * kl + alpha * (epsilon - kl)
    ref.close(total, np_total, rtol=1e-4)


@pytest.mark.parametrize(
    ("name", "action_spec", "alphas"),
    [
        ("vmpo", specs.DiscreteArray(3), {"temperature", "alpha"}),
        ("vmpo", specs.BoundedArray((D,), np.float32, -1.0, 1.0), {"temperature", "alpha_mean", "alpha_stddev"}),
        ("mpo", specs.BoundedArray((D,), np.float32, -2.0, 2.0), {"temperature", "alpha_mean", "alpha_stddev"}),
    ],
)
def test_agents_start_with_their_duals_at_the_configured_values(name, action_spec, alphas):
    config = podracer.defaults(name)
    config.network.hidden_sizes = (8,)
    state = agents.make(config, num_updates=4).init(jax.random.key(0), OBSERVATION_SPEC, action_spec)
    duals = state.duals if name == "vmpo" else state.own.duals
    assert set(duals) == alphas
    ref.close(em_losses.dual_value(duals["temperature"]), config.agent.initial_temperature, rtol=1e-4)


@pytest.mark.parametrize(
    ("name", "field", "value"),
    [
        ("vmpo", "agent.epsilon_temperature", 0.0),
        ("vmpo", "agent.epsilon_alpha_stddev", -1e-5),
        ("vmpo", "agent.target_update_period", 0),
        ("mpo", "agent.epsilon", 0.0),
        ("mpo", "agent.num_samples", 0),
        ("mpo", "network.core", "lstm"),
    ],
)
def test_bad_fields_are_refused_naming_them(name, field, value):
    config = podracer.defaults(name)
    section, key = field.split(".")
    config[section][key] = value
    with pytest.raises(ConfigError, match=field):
        agents.lookup(name).validate(config)


@pytest.mark.slow  # 30-45 s on the shared 2-core machine under load (40,000 steps, 5,000 gradient steps).
@pytest.mark.learning("last 100 episodes", at_least=100, random=22)
def test_discrete_mpo_learns_cartpole_from_replay(learning):
    """40,000 of the config's 200,000 steps: the categorical policy fitted to the E-step's weights under its KL
    bound, from the device buffer (random: 22). Seeds 0-4 are in docs/testing.md."""
    config = load_config("anakin_cartpole_mpo", num_devices=1, total_steps=40_000, seed=learning.seed)
    history = podracer.train(config).history
    assert history[0]["mean_episode_return"] < 100
    assert 0 < history[-1]["kl_policy"] < 0.05 and history[-1]["temperature"] > 0
    learning.check(podracer.recent_return(history))


@pytest.mark.slow  # About 10 s: a short Sebulba run.
def test_mpo_learns_from_the_learner_side_buffer_on_sebulba():
    """Discrete MPO on envpool CartPole's actor threads: the buffer fills on the learner device and the gradient
    steps start once it holds `min_replay_size` items, their losses and duals finite."""
    fields = {"agent.name": "mpo", "total_steps": 2_560, "agent.min_replay_size": 256, "agent.batch_size": 32}
    config = podracer.load_config("configs/sebulba_cartpole_dqn.py", {**fields, "network.hidden_sizes": (16,)})
    history = podracer.train(config).history
    last = history[-1]
    assert last["step"] == 2_560 and last["temperature"] > 0 and last["alpha"] > 0
    assert np.isfinite(last["critic_loss"]) and np.isfinite(last["actor_loss"])
