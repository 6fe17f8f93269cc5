"""PPO against independent NumPy references (float64): the loss, its gradient, GAE samples, and `learn` end to end."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from podracer.agents.algorithms import ppo
from podracer.agents.learning import minibatches
from podracer.agents.learning.optimizer import LearnerState
from podracer.devices.topology import DEVICE_AXIS
from tests.references import (
    OBS,
    A,
    B,
    T,
    close,
    close_loss,
    make_params,
    make_trajectory,
    np_apply,
    np_finite_difference_grad,
    np_log_softmax,
    np_make_samples,
    np_ppo,
    on_devices,
    unroll_fn,
)

N = (4, 6)  # Samples [L, M]: 6 sequences of 4 steps, as a recurrent network's minibatches are.
PPO_KWARGS = dict(clip_epsilon=0.2, value_cost=0.6, entropy_cost=0.03)


def _samples(params, seed=0):
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=N + (OBS,)).astype(np.float32)
    action = rng.integers(0, A, size=N)
    logits, value = np_apply(params, obs)
    log_prob = np.take_along_axis(np_log_softmax(logits), action[..., None], -1)[..., 0]
    valid = (rng.uniform(size=N) > 0.25).astype(np.float32)
    valid[0, :2] = (1.0, 0.0)
    return ppo.Samples(
        observation=jnp.asarray(obs),
        first=jnp.asarray(rng.uniform(size=N) < 0.2),
        action=jnp.asarray(action, jnp.int32),
        # Ratios spread around 1 so that some are clipped, some not.
        old_log_prob=jnp.asarray(log_prob + 0.3 * rng.normal(size=N), jnp.float32),
        old_value=jnp.asarray(value + 0.4 * rng.normal(size=N), jnp.float32),
        advantage=jnp.asarray(2.0 * rng.normal(size=N) + 0.5, jnp.float32),
        target_return=jnp.asarray(value + rng.normal(size=N), jnp.float32),
        valid=jnp.asarray(valid),
        state=(),  # The linear network is feed-forward.
    )


def _as_learned(loss_fn, normalize_advantages):
    """`loss_fn` as `learn` applies it to a minibatch: advantages normalised over it first, outside any mesh."""

    def fn(params, batch):
        if normalize_advantages:
            batch = batch.replace(advantage=ppo.masked_normalize(batch.advantage, batch.valid, None))
        return loss_fn(params, batch)

    return fn


@functools.cache
def _ppo_loss(clip_value_loss, normalize_advantages):
    """The loss outside any mesh (`axis_name=None`), jitted."""
    fn = functools.partial(ppo.loss, unroll_fn=unroll_fn, clip_value_loss=clip_value_loss, **PPO_KWARGS)
    return jax.jit(_as_learned(fn, normalize_advantages))


# Each flag combination is its own compilation, so two cases cover both sides of both flags.
@pytest.mark.parametrize("clip_value_loss, normalize_advantages", [(False, False), (True, True)])
def test_ppo_loss_and_metrics_match_numpy(clip_value_loss, normalize_advantages):
    params = make_params(2)
    batch = _samples(params)
    flags = dict(clip_value_loss=clip_value_loss, normalize_advantages=normalize_advantages)
    total, metrics = _ppo_loss(clip_value_loss, normalize_advantages)(params, batch)
    np_total, np_metrics = np_ppo(params, batch, **PPO_KWARGS, **flags)
    # The data exercise both sides of every clip.
    assert 0.1 < np_metrics["clip_fraction"] < 0.6
    close_loss(total, metrics, np_total, np_metrics)


def test_ppo_value_clipping_is_active_in_the_test_data():
    params = make_params(2)
    batch = _samples(params)
    flags = dict(normalize_advantages=True)
    clipped = np_ppo(params, batch, **PPO_KWARGS, clip_value_loss=True, **flags)[1]["value_loss"]
    unclipped = np_ppo(params, batch, **PPO_KWARGS, clip_value_loss=False, **flags)[1]["value_loss"]
    assert clipped > unclipped


def test_ppo_gradient_matches_finite_differences_of_numpy_loss():
    params = make_params(3)
    batch = _samples(params, seed=3)
    flags = dict(clip_value_loss=True, normalize_advantages=True)
    loss_fn = _as_learned(functools.partial(ppo.loss, unroll_fn=unroll_fn, clip_value_loss=True, **PPO_KWARGS), True)
    grads = jax.jit(jax.grad(lambda p, b: loss_fn(p, b)[0]))(params, batch)
    numeric = np_finite_difference_grad(lambda p: np_ppo(p, batch, **PPO_KWARGS, **flags)[0], params)
    for name, value in numeric.items():
        close(grads[name], value, rtol=1e-3, atol=1e-5)


def test_masked_normalize_pools_statistics_over_devices():
    rng = np.random.default_rng(4)
    x = (3.0 * rng.normal(size=(2, 10)) + 1.0).astype(np.float32)
    mask = np.ones((2, 10), np.float32)
    mask[0, [1, 4]] = 0.0
    mask[1, [0, 2, 3, 5, 9]] = 0.0  # Unequal counts on the two devices.
    normalize = functools.partial(ppo.masked_normalize, axis_name=DEVICE_AXIS)
    got = jax.jit(jax.vmap(normalize, axis_name=DEVICE_AXIS))(jnp.asarray(x), jnp.asarray(mask))
    xs = x.astype(np.float64)[mask > 0]
    expected = (x.astype(np.float64) - xs.mean()) / (xs.std() + 1e-8)
    close(got, expected, rtol=1e-5, atol=1e-5)
    # Not what normalising each device's half on its own would give.
    own = (x[0] - x[0][mask[0] > 0].mean()) / x[0][mask[0] > 0].std()
    assert not np.allclose(np.asarray(got[0]), own, atol=1e-3)
    # Outside any mesh (axis_name None) the statistics are this batch's own.
    alone = jax.jit(functools.partial(ppo.masked_normalize, axis_name=None))(jnp.asarray(x[0]), jnp.asarray(mask[0]))
    close(alone, own, rtol=1e-4, atol=1e-5)


def test_make_samples_matches_numpy_gae():
    gamma, gae_lambda = 0.95, 0.9
    params, trajectory = make_params(5), make_trajectory(5)
    make_samples = functools.partial(ppo.make_samples, unroll_fn=unroll_fn, gamma=gamma, gae_lambda=gae_lambda)
    samples = jax.jit(make_samples)(params, trajectory)
    expected = np_make_samples(params, trajectory, gamma, gae_lambda)
    # A feed-forward network's samples are one row of lone transitions, with no recurrent state.
    assert samples.action.shape == (1, T * B) and samples.state == ()
    for name in ("observation", "old_log_prob", "old_value", "advantage", "target_return"):
        close(getattr(samples, name), getattr(expected, name))
    for name in ("valid", "action", "first"):
        np.testing.assert_array_equal(getattr(samples, name), getattr(expected, name))
    # Time-major flattening: entry t * B + b is transition t of environment b.
    np.testing.assert_array_equal(np.asarray(samples.action).reshape(T, B), trajectory.action)
    # The GAE of the transition into a termination is the one-step TD error r - v.
    _, values = np_apply(params, trajectory.timestep.observation)
    reward = float(trajectory.timestep.reward[2, 0])
    close(np.asarray(samples.advantage).reshape(T, B)[1, 0], reward - values[1, 0])


# ---------------------------------------------------------------------------------------------
# PPO learn, end to end.

LEARN_KWARGS = dict(
    unroll_fn=unroll_fn,
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
    # axis_name None: outside any mesh, as in a notebook.
    learn = jax.jit(functools.partial(ppo.learn, optimizer=optimizer, num_epochs=2, num_minibatches=3, **LEARN_KWARGS))
    params, trajectory, key = make_params(6), make_trajectory(6), jax.random.PRNGKey(0)
    state = LearnerState(params, optimizer.init(params))

    new_state, metrics = learn(state, trajectory, key)
    assert set(metrics) == {"loss", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "grad_norm"}
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
    params = make_params(7)
    t1, t2 = make_trajectory(7), make_trajectory(8)
    # Two shards of B columns each: the whole batch is their concatenation along B.
    shards = jax.tree.map(lambda a, b: jnp.stack([a, b]), t1, t2)
    whole = jax.tree.map(lambda a, b: jnp.concatenate([a, b], axis=1), t1, t2)
    state = LearnerState(params, optimizer.init(params))

    learn = functools.partial(
        ppo.learn, optimizer=optimizer, num_epochs=1, num_minibatches=1, axis_name=DEVICE_AXIS, **LEARN_KWARGS
    )
    new_state, _ = jax.jit(lambda *a: on_devices(learn, *a, num_devices=2, replicated_args=(0,)))(
        state, shards, jax.random.split(jax.random.PRNGKey(1), 2)
    )
    # Replicated: both devices end with the same parameters.
    for name in params:
        close(new_state.params[name][0], np.asarray(new_state.params[name][1], np.float64), rtol=1e-6, atol=1e-7)

    # The reference step, all in NumPy: samples of the whole batch, finite-difference gradient of the loss.
    samples = np_make_samples(params, whole, LEARN_KWARGS["gamma"], LEARN_KWARGS["gae_lambda"])
    loss_kwargs = {k: v for k, v in LEARN_KWARGS.items() if k not in ("unroll_fn", "gamma", "gae_lambda")}
    grads = np_finite_difference_grad(lambda p: np_ppo(p, samples, **loss_kwargs)[0], params)
    for name in params:
        expected = np.asarray(params[name], np.float64) - lr * grads[name]
        close(new_state.params[name][0], expected, rtol=1e-5, atol=1e-5)


def test_ppo_learn_rejects_minibatches_that_do_not_divide_the_transitions():
    optimizer = optax.sgd(0.1)
    params, trajectory = make_params(), make_trajectory()
    learn = functools.partial(ppo.learn, optimizer=optimizer, num_epochs=1, num_minibatches=4, **LEARN_KWARGS)
    with pytest.raises(ValueError, match="agent.num_minibatches") as error:
        jax.eval_shape(learn, LearnerState(params, optimizer.init(params)), trajectory, jax.random.PRNGKey(0))
    assert "15 transitions" in str(error.value)


@pytest.mark.parametrize("n", [1, 5, 128, 512, 4096, 5000, 2048 * 128])
def test_shuffled_indices_is_a_permutation(n):
    order = np.asarray(minibatches.shuffled_indices(jax.random.key(n), n))
    np.testing.assert_array_equal(np.sort(order), np.arange(n))
    if n >= 128:
        assert not np.array_equal(order, np.arange(n))


def test_shuffled_indices_is_uniform_over_positions():
    """Every index lands in every position about equally often (chi-square over 4000 draws of n = 8)."""
    n, draws = 8, 4000
    orders = np.asarray(
        jax.vmap(lambda k: minibatches.shuffled_indices(k, n))(jax.random.split(jax.random.key(0), draws))
    )
    counts = np.zeros((n, n))
    for position in range(n):
        counts[:, position] = np.bincount(orders[:, position], minlength=n)
    expected = draws / n
    chi_square = ((counts - expected) ** 2 / expected).sum()
    assert chi_square < 100  # 49 degrees of freedom (the rows and columns sum to fixed totals): p < 1e-4 above 100.
