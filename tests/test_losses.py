"""Actor-critic and PPO losses against independent NumPy references (float64)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from podracer.agents import actor_critic, ppo
from podracer.agents.learner import LearnerState
from podracer.agents.trajectory import Trajectory
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep
from podracer.topology import DEVICE_AXIS, REPLICATED, SHARDED, device_mesh

T, B, OBS, A = 5, 3, 4, 3

# [T + 1, B]. Column 0: a termination (discount 0) in the middle, then the auto-reset FIRST.
# Column 1: a truncation (LAST with discount 1) in the middle, then FIRST.
# Column 2: no episode end until the final (bootstrap) timestep, a termination.
STEP_TYPE = np.array(
    [
        [FIRST, MID, MID],
        [MID, MID, MID],
        [LAST, MID, MID],
        [FIRST, LAST, MID],
        [MID, FIRST, MID],
        [MID, MID, LAST],
    ],
    np.int32,
)
DISCOUNT = np.ones((T + 1, B), np.float32)
DISCOUNT[2, 0] = 0.0
DISCOUNT[5, 2] = 0.0


# ---------------------------------------------------------------------------------------------
# A tiny linear network, in JAX and in NumPy.


def apply_fn(params, obs):
    return obs @ params["w_pi"] + params["b_pi"], obs @ params["w_v"] + params["b_v"]


def _np_apply(params, obs):
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    obs = np.asarray(obs, np.float64)
    return obs @ p["w_pi"] + p["b_pi"], obs @ p["w_v"] + p["b_v"]


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "w_pi": jnp.asarray(rng.normal(size=(OBS, A)), jnp.float32),
        "b_pi": jnp.asarray(0.3 * rng.normal(size=(A,)), jnp.float32),
        "w_v": jnp.asarray(rng.normal(size=(OBS,)), jnp.float32),
        "b_v": jnp.asarray(0.5, jnp.float32),
    }


def _trajectory(seed=0):
    rng = np.random.default_rng(seed)
    reward = rng.normal(size=(T + 1, B)).astype(np.float32)
    reward[STEP_TYPE == FIRST] = 0.0
    return Trajectory(
        timestep=TimeStep(
            step_type=jnp.asarray(STEP_TYPE),
            reward=jnp.asarray(reward),
            discount=jnp.asarray(DISCOUNT),
            observation=jnp.asarray(rng.normal(size=(T + 1, B, OBS)), jnp.float32),
        ),
        action=jnp.asarray(rng.integers(0, A, size=(T, B)), jnp.int32),
        behaviour_logits=jnp.asarray(rng.normal(size=(T, B, A)), jnp.float32),
    )


def _np_log_softmax(logits):
    z = logits - logits.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _np_transitions(trajectory, gamma, lam):
    """Per-transition quantities, following the trajectory module's docstring."""
    ts = trajectory.timestep
    step_type = np.asarray(ts.step_type)
    rewards = np.asarray(ts.reward, np.float64)[1:]
    discounts = gamma * np.asarray(ts.discount, np.float64)[1:]
    valid = (step_type[:-1] != LAST).astype(np.float64)
    lambdas = np.where(step_type[1:] == LAST, 0.0, lam)
    return rewards, discounts, valid, lambdas


def _np_lambda_returns(rewards, discounts, values, lambdas):
    returns = np.zeros_like(rewards)
    g = values[-1]
    for t in reversed(range(rewards.shape[0])):
        g = rewards[t] + discounts[t] * ((1 - lambdas[t]) * values[t + 1] + lambdas[t] * g)
        returns[t] = g
    return returns


def _np_gae(rewards, discounts, values, lambdas):
    advantages = np.zeros_like(rewards)
    a = np.zeros(rewards.shape[1:])
    for t in reversed(range(rewards.shape[0])):
        a = rewards[t] + discounts[t] * values[t + 1] - values[t] + discounts[t] * lambdas[t] * a
        advantages[t] = a
    return advantages


def _on_devices(fn, *args, num_devices=1, replicated_args=()):
    """Runs `fn` per device under `jax.shard_map` over `num_devices` devices.

    With one device the args are used as they are. With several, every arg except
    those at `replicated_args` positions has a leading device axis that is split
    over the mesh, and the outputs keep that axis.
    """
    mesh = device_mesh(jax.devices()[:num_devices])
    if num_devices == 1:
        return jax.shard_map(fn, mesh=mesh, in_specs=REPLICATED, out_specs=REPLICATED, check_vma=False)(*args)
    sharded = [i not in replicated_args for i in range(len(args))]

    def per_device(*a):
        a = [jax.tree.map(lambda x: x[0], arg) if split else arg for arg, split in zip(a, sharded)]
        return jax.tree.map(lambda x: x[None], fn(*a))

    in_specs = tuple(SHARDED if split else REPLICATED for split in sharded)
    return jax.shard_map(per_device, mesh=mesh, in_specs=in_specs, out_specs=SHARDED)(*args)


def _close(got, expected, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), expected, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------------
# The reference trajectory's returns follow the episode boundaries.


def test_reference_returns_cut_at_episode_ends():
    gamma, lam = 0.9, 0.8
    trajectory, params = _trajectory(), _params()
    _, values = _np_apply(params, trajectory.timestep.observation)
    rewards, discounts, valid, lambdas = _np_transitions(trajectory, gamma, lam)
    returns = _np_lambda_returns(rewards, discounts, values, lambdas)
    # Termination into t = 2 of column 0: no bootstrap at all.
    np.testing.assert_allclose(returns[1, 0], rewards[1, 0])
    # Truncation into t = 3 of column 1: bootstrap from the truncated observation's value.
    np.testing.assert_allclose(returns[2, 1], rewards[2, 1] + gamma * values[3, 1])
    # Termination at the last timestep of column 2.
    np.testing.assert_allclose(returns[4, 2], rewards[4, 2])
    np.testing.assert_array_equal(valid[:, 0], [1, 1, 0, 1, 1])
    np.testing.assert_array_equal(valid[:, 1], [1, 1, 1, 0, 1])
    np.testing.assert_array_equal(valid[:, 2], [1, 1, 1, 1, 1])


# ---------------------------------------------------------------------------------------------
# Actor-critic.

AC_KWARGS = dict(gamma=0.9, td_lambda=0.8, value_cost=0.7, entropy_cost=0.05)


def _np_actor_critic(params, trajectory, *, gamma, td_lambda, value_cost, entropy_cost):
    """Loss, metrics and the analytic gradient of the loss w.r.t. the linear network's params."""
    obs = np.asarray(trajectory.timestep.observation, np.float64)
    logits, values = _np_apply(params, obs)
    rewards, discounts, valid, lambdas = _np_transitions(trajectory, gamma, td_lambda)
    returns = _np_lambda_returns(rewards, discounts, values, lambdas)
    return _np_policy_gradient(obs, logits, values, np.asarray(trajectory.action), valid, returns - values[:-1],
                               returns, value_cost=value_cost, entropy_cost=entropy_cost)


def _np_policy_gradient(obs, logits, values, action, valid, advantages, value_targets, *, value_cost, entropy_cost):
    """The actor-critic objective for given advantages and value targets (both constants): loss, metrics, gradient.

    `obs`, `logits`, `values` cover all T + 1 timesteps; the rest are per transition `[T, B]`.
    """
    log_probs_all = _np_log_softmax(logits[:-1])
    probs = np.exp(log_probs_all)
    log_probs = np.take_along_axis(log_probs_all, action[..., None], -1)[..., 0]
    entropy_all = -(probs * log_probs_all).sum(-1)
    n = T * B
    policy_loss = -(valid * log_probs * advantages).sum() / n
    value_loss = 0.5 * (valid * (value_targets - values[:-1]) ** 2).sum() / n
    entropy = (valid * entropy_all).sum() / n
    total = policy_loss + value_cost * value_loss - entropy_cost * entropy

    # Gradient: the advantages and the targets are constants.
    one_hot = np.eye(A)[action]
    d_logits = -(valid * advantages)[..., None] * (one_hot - probs) / n  # policy term
    d_entropy = -probs * (log_probs_all + entropy_all[..., None])  # dH/dlogits
    d_logits += -entropy_cost * valid[..., None] * d_entropy / n
    d_values = value_cost * valid * (values[:-1] - value_targets) / n  # only v_0..v_{T-1}
    x = obs[:-1]
    grads = {
        "w_pi": np.einsum("tbi,tba->ia", x, d_logits),
        "b_pi": d_logits.sum((0, 1)),
        "w_v": np.einsum("tbi,tb->i", x, d_values),
        "b_v": d_values.sum(),
    }
    metrics = {"loss": total, "policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy}
    return total, metrics, grads


@jax.jit
def _ac_loss(params, trajectory, td_lambda=AC_KWARGS["td_lambda"]):
    """One compilation for every td_lambda: it is a traced scalar here."""
    kwargs = dict(AC_KWARGS, td_lambda=td_lambda)
    return actor_critic.loss(params, trajectory, apply_fn=apply_fn, **kwargs)


@pytest.mark.parametrize("td_lambda", [0.0, 0.8, 1.0])
def test_actor_critic_loss_and_metrics_match_numpy(td_lambda):
    kwargs = dict(AC_KWARGS, td_lambda=td_lambda)
    params, trajectory = _params(), _trajectory()
    total, metrics = _ac_loss(params, trajectory, jnp.float32(td_lambda))
    np_total, np_metrics, _ = _np_actor_critic(params, trajectory, **kwargs)
    _close(total, np_total)
    assert set(metrics) == set(np_metrics)
    for name, value in np_metrics.items():
        _close(metrics[name], value, rtol=1e-5, atol=1e-6)


def test_actor_critic_gradient_matches_numpy_policy_gradient_and_critic_formulas():
    params, trajectory = _params(1), _trajectory(1)
    loss_fn = functools.partial(actor_critic.loss, apply_fn=apply_fn, **AC_KWARGS)
    grads = jax.jit(jax.grad(lambda p, t: loss_fn(p, t)[0]))(params, trajectory)
    _, _, np_grads = _np_actor_critic(params, trajectory, **AC_KWARGS)
    for name, value in np_grads.items():
        _close(grads[name], value, rtol=1e-4, atol=1e-6)


def test_actor_critic_masked_step_does_not_matter():
    """The action and behaviour on the LAST -> FIRST reset step never enter the loss."""
    params, trajectory = _params(), _trajectory()
    td_lambda = jnp.float32(AC_KWARGS["td_lambda"])
    base = _ac_loss(params, trajectory, td_lambda)[0]
    action = trajectory.action.at[2, 0].set((trajectory.action[2, 0] + 1) % A)
    moved = _ac_loss(params, trajectory.replace(action=action), td_lambda)[0]
    _close(moved, float(base), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------
# PPO.

N = 24
PPO_KWARGS = dict(clip_epsilon=0.2, value_cost=0.6, entropy_cost=0.03)


def _samples(params, seed=0):
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(N, OBS)).astype(np.float32)
    action = rng.integers(0, A, size=N)
    logits, value = _np_apply(params, obs)
    log_prob = np.take_along_axis(_np_log_softmax(logits), action[:, None], -1)[:, 0]
    valid = (rng.uniform(size=N) > 0.25).astype(np.float32)
    valid[:2] = (1.0, 0.0)
    return ppo.Samples(
        observation=jnp.asarray(obs),
        action=jnp.asarray(action, jnp.int32),
        # Ratios spread around 1 so that some are clipped, some not.
        old_log_prob=jnp.asarray(log_prob + 0.3 * rng.normal(size=N), jnp.float32),
        old_value=jnp.asarray(value + 0.4 * rng.normal(size=N), jnp.float32),
        advantage=jnp.asarray(2.0 * rng.normal(size=N) + 0.5, jnp.float32),
        target_return=jnp.asarray(value + rng.normal(size=N), jnp.float32),
        valid=jnp.asarray(valid),
    )


def _np_ppo(params, batch, *, clip_epsilon, clip_value_loss, value_cost, entropy_cost, normalize_advantages):
    b = {k: np.asarray(getattr(batch, k), np.float64) for k in ppo.Samples.__dataclass_fields__}
    logits, value = _np_apply(params, b["observation"])
    log_probs_all = _np_log_softmax(logits)
    log_prob = np.take_along_axis(log_probs_all, b["action"].astype(int)[:, None], -1)[:, 0]
    valid = b["valid"]
    n = len(valid)
    log_ratio = log_prob - b["old_log_prob"]
    ratio = np.exp(log_ratio)
    adv = b["advantage"]
    if normalize_advantages:
        mean = adv[valid > 0].mean()
        std = adv[valid > 0].std()  # population std (ddof 0)
        adv = (adv - mean) / (std + 1e-8)
    # Schulman et al. 2017, eq. 7: L^CLIP = E[min(r A, clip(r, 1 - eps, 1 + eps) A)], minimised as its negative.
    surrogate = np.minimum(ratio * adv, np.clip(ratio, 1 - clip_epsilon, 1 + clip_epsilon) * adv)
    policy_loss = -(valid * surrogate).sum() / n
    unclipped = (value - b["target_return"]) ** 2
    if clip_value_loss:
        v_clipped = b["old_value"] + np.clip(value - b["old_value"], -clip_epsilon, clip_epsilon)
        value_error = np.maximum(unclipped, (v_clipped - b["target_return"]) ** 2)
    else:
        value_error = unclipped
    value_loss = 0.5 * (valid * value_error).sum() / n
    entropy = (valid * -(np.exp(log_probs_all) * log_probs_all).sum(-1)).sum() / n
    total = policy_loss + value_cost * value_loss - entropy_cost * entropy
    return total, {
        "loss": total,
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "approx_kl": (valid * ((ratio - 1) - log_ratio)).sum() / n,
        "clip_fraction": (valid * (np.abs(ratio - 1) > clip_epsilon)).sum() / n,
    }


@functools.lru_cache(maxsize=None)
def _ppo_loss_on_device(clip_value_loss, normalize_advantages):
    fn = functools.partial(
        ppo.loss,
        apply_fn=apply_fn,
        clip_value_loss=clip_value_loss,
        normalize_advantages=normalize_advantages,
        **PPO_KWARGS,
    )
    return jax.jit(lambda params, batch: _on_devices(fn, params, batch))


# Each flag combination is its own compilation, so two cases cover both sides of both flags.
@pytest.mark.parametrize("clip_value_loss, normalize_advantages", [(False, False), (True, True)])
def test_ppo_loss_and_metrics_match_numpy(clip_value_loss, normalize_advantages):
    params = _params(2)
    batch = _samples(params)
    flags = dict(clip_value_loss=clip_value_loss, normalize_advantages=normalize_advantages)
    total, metrics = _ppo_loss_on_device(clip_value_loss, normalize_advantages)(params, batch)
    np_total, np_metrics = _np_ppo(params, batch, **PPO_KWARGS, **flags)
    # The data exercise both sides of every clip.
    assert 0.1 < np_metrics["clip_fraction"] < 0.6
    _close(total, np_total)
    assert set(metrics) == set(np_metrics)
    for name, value in np_metrics.items():
        _close(metrics[name], value, rtol=1e-5, atol=1e-6)


def test_ppo_value_clipping_is_active_in_the_test_data():
    params = _params(2)
    batch = _samples(params)
    flags = dict(normalize_advantages=True)
    clipped = _np_ppo(params, batch, **PPO_KWARGS, clip_value_loss=True, **flags)[1]["value_loss"]
    unclipped = _np_ppo(params, batch, **PPO_KWARGS, clip_value_loss=False, **flags)[1]["value_loss"]
    assert clipped > unclipped


def _np_finite_difference_grad(np_loss, params, eps=1e-6):
    """Central differences of a float64 NumPy loss w.r.t. every parameter entry."""
    params = {k: np.asarray(v, np.float64) for k, v in params.items()}
    grads = {}
    for name, value in params.items():
        grads[name] = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            plus = {k: v.copy() for k, v in params.items()}
            minus = {k: v.copy() for k, v in params.items()}
            plus[name][index] += eps
            minus[name][index] -= eps
            grads[name][index] = (np_loss(plus) - np_loss(minus)) / (2 * eps)
    return grads


def test_ppo_gradient_matches_finite_differences_of_numpy_loss():
    params = _params(3)
    batch = _samples(params, seed=3)
    flags = dict(clip_value_loss=True, normalize_advantages=True)
    loss_fn = functools.partial(ppo.loss, apply_fn=apply_fn, **flags, **PPO_KWARGS)
    grads = jax.jit(jax.grad(lambda p, b: _on_devices(loss_fn, p, b)[0]))(params, batch)
    numeric = _np_finite_difference_grad(lambda p: _np_ppo(p, batch, **PPO_KWARGS, **flags)[0], params)
    for name, value in numeric.items():
        _close(grads[name], value, rtol=1e-3, atol=1e-5)


def test_masked_normalize_pools_statistics_over_devices():
    rng = np.random.default_rng(4)
    x = (3.0 * rng.normal(size=(2, 10)) + 1.0).astype(np.float32)
    mask = np.ones((2, 10), np.float32)
    mask[0, [1, 4]] = 0.0
    mask[1, [0, 2, 3, 5, 9]] = 0.0  # Unequal counts on the two devices.
    got = jax.jit(jax.vmap(ppo.masked_normalize, axis_name=DEVICE_AXIS))(jnp.asarray(x), jnp.asarray(mask))
    xs = x.astype(np.float64)[mask > 0]
    expected = (x.astype(np.float64) - xs.mean()) / (xs.std() + 1e-8)
    _close(got, expected, rtol=1e-5, atol=1e-5)
    # Not what normalising each device's half on its own would give.
    own = (x[0] - x[0][mask[0] > 0].mean()) / x[0][mask[0] > 0].std()
    assert not np.allclose(np.asarray(got[0]), own, atol=1e-3)


def _np_make_samples(params, trajectory, gamma, gae_lambda):
    """GAE (lambda cut at LAST), return targets and behaviour log-probs, flattened time-major, float64."""
    obs = np.asarray(trajectory.timestep.observation, np.float64)
    _, values = _np_apply(params, obs)
    rewards, discounts, valid, lambdas = _np_transitions(trajectory, gamma, gae_lambda)
    advantages = _np_gae(rewards, discounts, values, lambdas)
    action = np.asarray(trajectory.action)
    behaviour = _np_log_softmax(np.asarray(trajectory.behaviour_logits, np.float64))
    old_log_prob = np.take_along_axis(behaviour, action[..., None], -1)[..., 0]
    flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
    return ppo.Samples(
        observation=flat(obs[:-1]),
        action=flat(action),
        old_log_prob=flat(old_log_prob),
        old_value=flat(values[:-1]),
        advantage=flat(advantages),
        target_return=flat(advantages + values[:-1]),
        valid=flat(valid),
    )


def test_make_samples_matches_numpy_gae():
    gamma, gae_lambda = 0.95, 0.9
    params, trajectory = _params(5), _trajectory(5)
    make_samples = functools.partial(ppo.make_samples, apply_fn=apply_fn, gamma=gamma, gae_lambda=gae_lambda)
    samples = jax.jit(make_samples)(params, trajectory)
    expected = _np_make_samples(params, trajectory, gamma, gae_lambda)
    assert samples.action.shape == (T * B,)
    for name in ("observation", "old_log_prob", "old_value", "advantage", "target_return"):
        _close(getattr(samples, name), getattr(expected, name))
    np.testing.assert_array_equal(samples.valid, expected.valid)
    np.testing.assert_array_equal(samples.action, expected.action)
    # Time-major flattening: entry t * B + b is transition t of environment b.
    np.testing.assert_array_equal(np.asarray(samples.action).reshape(T, B), trajectory.action)
    # The GAE of the transition into a termination is the one-step TD error r - v.
    _, values = _np_apply(params, trajectory.timestep.observation)
    reward = float(trajectory.timestep.reward[2, 0])
    _close(np.asarray(samples.advantage).reshape(T, B)[1, 0], reward - values[1, 0])


# ---------------------------------------------------------------------------------------------
# PPO learn, end to end.

LEARN_KWARGS = dict(
    apply_fn=apply_fn,
    gamma=0.99,
    gae_lambda=0.95,
    clip_epsilon=0.2,
    clip_value_loss=True,
    value_cost=0.5,
    entropy_cost=0.01,
    normalize_advantages=True,
)


def _tree_equal(a, b):
    return all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(np.array_equal(x, y)), a, b)))


def test_ppo_learn_smoke_and_zero_learning_rate():
    optimizer = optax.inject_hyperparams(optax.adam)(learning_rate=1e-2)
    learn = jax.jit(
        lambda state, trajectory, key: _on_devices(
            functools.partial(ppo.learn, optimizer=optimizer, num_epochs=2, num_minibatches=3, **LEARN_KWARGS),
            state,
            trajectory,
            key,
        )
    )
    params, trajectory, key = _params(6), _trajectory(6), jax.random.PRNGKey(0)
    state = LearnerState(params, optimizer.init(params))

    new_state, metrics = learn(state, trajectory, key)
    assert set(metrics) == {"loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction"}
    for name, value in metrics.items():
        assert np.shape(value) == () and np.isfinite(value), name
    for name in params:
        assert not np.allclose(new_state.params[name], params[name]), name

    # Same compiled program, learning rate 0: the parameters do not move at all.
    hyperparams = state.opt_state.hyperparams
    zero_lr = hyperparams | {"learning_rate": jnp.zeros_like(hyperparams["learning_rate"])}
    frozen, metrics = learn(state.replace(opt_state=state.opt_state._replace(hyperparams=zero_lr)), trajectory, key)
    assert _tree_equal(frozen.params, params)
    assert all(np.isfinite(v) for v in metrics.values())


def test_ppo_learn_on_two_devices_is_one_step_on_the_whole_batch():
    """One epoch, one minibatch, SGD: learn on two shards == params - lr * grad of the whole-batch loss."""
    lr = 0.1
    optimizer = optax.sgd(lr)
    params = _params(7)
    t1, t2 = _trajectory(7), _trajectory(8)
    # Two shards of B columns each: the whole batch is their concatenation along B.
    shards = jax.tree.map(lambda a, b: jnp.stack([a, b]), t1, t2)
    whole = jax.tree.map(lambda a, b: jnp.concatenate([a, b], axis=1), t1, t2)
    state = LearnerState(params, optimizer.init(params))

    learn = functools.partial(ppo.learn, optimizer=optimizer, num_epochs=1, num_minibatches=1, **LEARN_KWARGS)
    new_state, _ = jax.jit(lambda *a: _on_devices(learn, *a, num_devices=2, replicated_args=(0,)))(
        state, shards, jax.random.split(jax.random.PRNGKey(1), 2)
    )
    # Replicated: both devices end with the same parameters.
    for name in params:
        _close(new_state.params[name][0], np.asarray(new_state.params[name][1], np.float64), rtol=1e-6, atol=1e-7)

    # The reference step, all in NumPy: samples of the whole batch, finite-difference gradient of the loss.
    samples = _np_make_samples(params, whole, LEARN_KWARGS["gamma"], LEARN_KWARGS["gae_lambda"])
    loss_kwargs = {k: v for k, v in LEARN_KWARGS.items() if k not in ("apply_fn", "gamma", "gae_lambda")}
    grads = _np_finite_difference_grad(lambda p: _np_ppo(p, samples, **loss_kwargs)[0], params)
    for name in params:
        expected = np.asarray(params[name], np.float64) - lr * grads[name]
        _close(new_state.params[name][0], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 5, 128, 512, 4096, 5000, 2048 * 128])
def test_shuffled_indices_is_a_permutation(n):
    order = np.asarray(ppo.shuffled_indices(jax.random.key(n), n))
    np.testing.assert_array_equal(np.sort(order), np.arange(n))
    if n >= 128:
        assert not np.array_equal(order, np.arange(n))


def test_shuffled_indices_is_uniform_over_positions():
    """Every index lands in every position about equally often (chi-square over 4000 draws of n = 8)."""
    n, draws = 8, 4000
    orders = np.asarray(jax.vmap(lambda k: ppo.shuffled_indices(k, n))(jax.random.split(jax.random.key(0), draws)))
    counts = np.zeros((n, n))
    for position in range(n):
        counts[:, position] = np.bincount(orders[:, position], minlength=n)
    expected = draws / n
    chi_square = ((counts - expected) ** 2 / expected).sum()
    assert chi_square < 100  # 49 degrees of freedom (the rows and columns sum to fixed totals): p < 1e-4 above 100.
