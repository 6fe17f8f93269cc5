"""LPG (podracer.agents.meta.lpg_rule): the meta-network's targets and the agent's update against a NumPy reference, the
meta-gradient through one update against finite differences, and a saved rule training agents in another process.

The agent here is tabular: its "network" returns the policy logits and the
prediction logits it holds for every timestep, so the gradient of the update
in them has a closed form.
"""

import functools

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents.meta import lpg_rule, rule_checkpoint
from podracer.agents.trajectory import Trajectory
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep
from tests.helpers import last_json_line, run_module

T, B, A, M = 4, 2, 3, 3
SETTINGS = lpg_rule.RuleSettings(hidden_size=5, prediction_size=M, embedding_size=2)
GAMMA, ALPHA_Y = 0.9, 0.7


def tabular_unroll(params, state, observation, first):
    """The tabular agent: logits `[T + 1, B, A]` and prediction logits `[T + 1, B, M]`, read from its parameters."""
    return state, ({"logits": params["pi"]}, params["y"])


def trajectory(rng: np.random.Generator) -> Trajectory:
    """Environment 0 ends an episode at timestep 2 (its transition 2 is the reset step); environment 1 does not."""
    step_type = np.array([[FIRST, MID], [MID, MID], [LAST, MID], [FIRST, MID], [MID, MID]], np.int32)
    discount = np.where(step_type == LAST, 0.0, 1.0).astype(np.float32)
    timestep = TimeStep(step_type, rng.normal(size=(T + 1, B)).astype(np.float32), discount, np.zeros((T + 1, B, 1)))
    return Trajectory(timestep=timestep, action=rng.integers(0, A, size=(T, B)).astype(np.int32), extras=())


def agent_params(rng: np.random.Generator) -> dict:
    return {"pi": rng.normal(size=(T + 1, B, A)), "y": rng.normal(size=(T + 1, B, M))}


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def reference_targets(eta: dict, rewards, ends, discounts, action_probs, y):
    """The meta-network in NumPy: phi on both predictions, an LSTM from t = T - 1 down to 0, the two heads."""
    p = jax.tree.map(np.asarray, eta["params"])

    def phi(v):
        hidden = np.maximum(v @ p["phi"]["Dense_0"]["kernel"] + p["phi"]["Dense_0"]["bias"], 0)
        return hidden @ p["phi_out"]["kernel"] + p["phi_out"]["bias"]

    cell = p["Core_0"]["OptimizedLSTMCell_1"]
    x = np.concatenate([np.stack([rewards, ends, discounts, action_probs], -1), phi(y[:-1]), phi(y[1:])], -1)
    c = h = np.zeros((B, SETTINGS.hidden_size))
    hidden = np.zeros((T, B, SETTINGS.hidden_size))
    for t in reversed(range(T)):

        def gate(name, h=h, t=t):
            return x[t] @ cell[f"i{name}"]["kernel"] + h @ cell[f"h{name}"]["kernel"] + cell[f"h{name}"]["bias"]

        i, f, g, o = sigmoid(gate("i")), sigmoid(gate("f")), np.tanh(gate("g")), sigmoid(gate("o"))
        c = f * c + i * g
        h = o * np.tanh(c)
        hidden[t] = h
    pi_hat = (hidden @ p["pi_hat"]["kernel"] + p["pi_hat"]["bias"])[..., 0]
    return pi_hat, softmax(hidden @ p["y_hat"]["kernel"] + p["y_hat"]["bias"])


def test_targets_and_update_match_numpy():
    rng = np.random.default_rng(0)
    traj, params = trajectory(rng), agent_params(rng)
    eta = lpg_rule.init_rule(jax.random.key(1), SETTINGS)
    loss_fn = functools.partial(
        lpg_rule.agent_loss, settings=SETTINGS, unroll_fn=tabular_unroll, gamma=GAMMA, prediction_cost=ALPHA_Y
    )
    (loss, metrics), grads = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))(params, eta, traj)

    step_type = traj.timestep.step_type
    rewards, discounts = traj.timestep.reward[1:], GAMMA * traj.timestep.discount[1:]
    ends, valid = (step_type[1:] == LAST).astype(float), (step_type[:-1] != LAST).astype(float)
    pi, y = softmax(params["pi"][:-1]), softmax(params["y"])
    onehot = np.eye(A)[traj.action]
    taken = (pi * onehot).sum(-1)
    pi_hat, y_hat = reference_targets(eta, rewards, ends, discounts, taken, y)
    np.testing.assert_allclose(metrics["pi_hat"], np.mean(valid * pi_hat), rtol=1e-5, atol=1e-6)

    kl = (y[:-1] * (np.log(y[:-1]) - np.log(y_hat))).sum(-1)
    policy_loss, prediction_loss = -np.mean(valid * np.log(taken) * pi_hat), np.mean(valid * kl)
    np.testing.assert_allclose(metrics["policy_loss"], policy_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(metrics["prediction_loss"], prediction_loss, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, policy_loss + ALPHA_Y * prediction_loss, rtol=1e-5, atol=1e-6)

    # Eq. 2, term by term: the targets are constants to the agent's update.
    n = T * B
    grad_pi = -(valid * pi_hat)[..., None] * (onehot - pi) / n
    grad_y = ALPHA_Y * valid[..., None] * y[:-1] * (np.log(y[:-1]) - np.log(y_hat) - kl[..., None]) / n
    np.testing.assert_allclose(grads["pi"][:-1], grad_pi, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grads["y"][:-1], grad_y, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(grads["pi"][-1], 0.0)  # The last timestep's outputs are only read by the rule.
    np.testing.assert_array_equal(grads["y"][-1], 0.0)


@pytest.mark.slow  # Compiles a second-order gradient through the LSTM, about 5 s.
def test_meta_gradient_through_one_update_matches_finite_differences():
    """d/d eta of the A2C objective and Eq. 4's regularisers after one SGD step of the LPG loss, in float64."""
    with jax.enable_x64(True):
        rng = np.random.default_rng(1)
        traj, params = trajectory(rng), agent_params(rng)
        values = jnp.asarray(rng.normal(size=(T + 1, B)))
        eta = jax.tree.map(lambda x: x.astype(jnp.float64), lpg_rule.init_rule(jax.random.key(2), SETTINGS))
        common = {"settings": SETTINGS, "unroll_fn": tabular_unroll, "gamma": GAMMA}

        def outer(eta):
            grads = jax.grad(lambda p: lpg_rule.agent_loss(p, eta, traj, prediction_cost=ALPHA_Y, **common)[0])(params)
            updated = jax.tree.map(lambda p, g: p - 3.0 * g, params, grads)
            objective, _ = lpg_rule.meta_objective(
                updated, traj, values, unroll_fn=tabular_unroll, gamma=GAMMA, td_lambda=0.8
            )
            regularisers, _ = lpg_rule.regularisers(updated, eta, traj, costs=(0.1, 0.2, 0.3, 0.4), **common)
            return objective + regularisers

        leaves, unravel = jax.flatten_util.ravel_pytree(eta)
        direction = jnp.asarray(rng.normal(size=leaves.shape))

        @jax.jit
        def both(eps):  # One program: the directional derivative by reverse mode, and the two evaluations around eta.
            analytic = jnp.dot(jax.flatten_util.ravel_pytree(jax.grad(outer)(eta))[0], direction)
            return analytic, (outer(unravel(leaves + eps * direction)) - outer(unravel(leaves - eps * direction))) / (
                2 * eps
            )

        analytic, numeric = both(1e-6)
        assert abs(analytic) > 1e-4  # The objective does depend on eta.
        np.testing.assert_allclose(analytic, numeric, rtol=1e-6)


def test_regularisers_are_eq4_terms():
    rng = np.random.default_rng(2)
    traj, params = trajectory(rng), agent_params(rng)
    eta = lpg_rule.init_rule(jax.random.key(3), SETTINGS)
    common = {"settings": SETTINGS, "unroll_fn": tabular_unroll, "gamma": GAMMA}
    regularisers = jax.jit(functools.partial(lpg_rule.regularisers, costs=(0.1, 0.2, 0.3, 0.4), **common))
    total, terms = regularisers(params, eta, traj)
    step_type = traj.timestep.step_type
    valid = (step_type[:-1] != LAST).astype(float)
    pi, y = softmax(params["pi"][:-1]), softmax(params["y"][:-1])
    taken = (pi * np.eye(A)[traj.action]).sum(-1)
    tr = (traj.timestep.reward[1:], (step_type[1:] == LAST).astype(float), GAMMA * traj.timestep.discount[1:])
    pi_hat, y_hat = reference_targets(eta, *tr, taken, softmax(params["y"]))
    expected = {
        "policy_entropy": np.mean(valid * -(pi * np.log(pi)).sum(-1)),
        "prediction_entropy": np.mean(valid * -(y * np.log(y)).sum(-1)),
        "pi_hat_l2": np.mean(valid * pi_hat**2),
        "y_hat_l2": np.mean(valid * (y_hat**2).sum(-1)),
    }
    for name, value in expected.items():
        np.testing.assert_allclose(terms[name], value, rtol=1e-5, err_msg=name)
    signed = -0.1 * expected["policy_entropy"] - 0.2 * expected["prediction_entropy"]
    np.testing.assert_allclose(total, signed + 0.3 * expected["pi_hat_l2"] + 0.4 * expected["y_hat_l2"], rtol=1e-5)


@pytest.mark.slow  # One fresh process training briefly under both architectures, about 10 s.
def test_a_saved_rule_trains_agents_in_another_process_under_both_architectures(tmp_path):
    settings = lpg_rule.RuleSettings(hidden_size=8, prediction_size=4, embedding_size=4)
    eta = lpg_rule.init_rule(jax.random.key(4), settings)
    rule_checkpoint.save_rule(str(tmp_path / "rule"), eta, settings)
    restored, read = rule_checkpoint.load_rule(str(tmp_path / "rule"))
    assert read == settings
    jax.tree.map(np.testing.assert_array_equal, restored, eta)

    result = run_module("learned_rule_run", str(tmp_path / "rule"), "4", num_devices=2)
    assert result.returncode == 0, result.stderr
    summary = last_json_line(result.stdout)
    assert summary["anakin"]["step"] == 2048 and summary["sebulba"]["step"] == 480, summary
    for run in summary.values():
        assert np.isfinite(run["loss"]) and run["prediction_loss"] > 0, summary
