"""Independent NumPy references (float64) for the agents' returns and losses, and the data the tests share.

- A tiny linear actor-critic network, in JAX (`unroll_fn`, `make_params`) and NumPy
  (`np_apply`), and a 5 x 3 trajectory (`make_trajectory`) with a termination, a
  truncation and an auto-reset in it.
- The per-transition quantities (`np_transitions`), TD(lambda) returns, PQN's
  Q(lambda) targets, GAE, V-trace in the paper's sum form and in its recursive form.
- The actor-critic, IMPALA and PPO objectives with their analytic gradients or
  through finite differences (`np_finite_difference_grad`).
- `close` for comparing JAX results with them, and `on_devices`, which runs a
  per-device function under `jax.shard_map`, as the architectures do.

Everything here is written from the papers and the module docstrings, never
from podracer's code.
"""

import jax
import jax.numpy as jnp
import numpy as np

from podracer.agents.algorithms import ppo
from podracer.agents.trajectory import Trajectory
from podracer.devices.topology import REPLICATED, SHARDED, device_mesh
from podracer.envs.timestep import FIRST, LAST, MID, TimeStep

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
# A tiny linear network, in JAX and in NumPy, and the shared trajectory.


def unroll_fn(params, state, obs, first):
    """`(state, (outputs, values))` over observations `[T, B, OBS]`, as the agents' networks return them.

    The network is feed-forward: its state is `()` and passes through, and `first` (where episodes start) only
    has its type checked, so that a loss handing it anything but a boolean mask `[T, B]` fails here.
    """
    assert state == () and first.dtype == jnp.bool_ and first.shape == obs.shape[:-1], (state, first, obs.shape)
    return state, ({"logits": obs @ params["w_pi"] + params["b_pi"]}, obs @ params["w_v"] + params["b_v"])


def np_apply(params, obs):
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    obs = np.asarray(obs, np.float64)
    return obs @ p["w_pi"] + p["b_pi"], obs @ p["w_v"] + p["b_v"]


def make_params(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "w_pi": jnp.asarray(rng.normal(size=(OBS, A)), jnp.float32),
        "b_pi": jnp.asarray(0.3 * rng.normal(size=(A,)), jnp.float32),
        "w_v": jnp.asarray(rng.normal(size=(OBS,)), jnp.float32),
        "b_v": jnp.asarray(0.5, jnp.float32),
    }


def make_trajectory(seed=0):
    """The 5 x 3 trajectory of `STEP_TYPE` and `DISCOUNT`, with random rewards, observations, actions and logits."""
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
        extras={"logits": jnp.asarray(rng.normal(size=(T, B, A)), jnp.float32)},  # The behaviour policy's.
    )


def np_log_softmax(logits):
    z = logits - logits.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def np_transitions(trajectory, gamma, lam, reward_clip=0.0):
    """Per-transition rewards, discounts, valid mask and lambdas, following the trajectory module's docstring."""
    ts = trajectory.timestep
    step_type = np.asarray(ts.step_type)
    rewards = np.asarray(ts.reward, np.float64)[1:]
    if reward_clip > 0:
        rewards = np.clip(rewards, -reward_clip, reward_clip)
    discounts = gamma * np.asarray(ts.discount, np.float64)[1:]
    valid = (step_type[:-1] != LAST).astype(np.float64)
    lambdas = np.where(step_type[1:] == LAST, 0.0, lam)
    return rewards, discounts, valid, lambdas


# ---------------------------------------------------------------------------------------------
# Returns.


def np_lambda_returns(rewards, discounts, values, lambdas):
    """G_t = r_t + d_t ((1 - l_t) v_{t+1} + l_t G_{t+1}), G_T = v_T (Sutton & Barto eq. 12.18)."""
    rewards, discounts, values, lambdas = (np.asarray(x, np.float64) for x in (rewards, discounts, values, lambdas))
    num_steps = rewards.shape[0]
    returns = np.zeros_like(rewards)
    next_return = values[num_steps].copy()
    for t in reversed(range(num_steps)):
        next_return = rewards[t] + discounts[t] * ((1 - lambdas[t]) * values[t + 1] + lambdas[t] * next_return)
        returns[t] = next_return
    return returns


def np_q_lambda_targets(trajectory, q_values, gamma, lam, reward_scale=1.0):
    """PQN's targets (Gallici et al. 2025, Section 4), one environment and one step at a time, backwards:
    R_t = c r_{t+1} + gamma d_{t+1} [lam R_{t+1} + (1 - lam) max_a Q(s_{t+1}, a)], with only the max where
    s_{t+1} is the last step of an episode, and R_T = max_a Q(s_T, a) at the end of the rollout (c: reward_scale)."""
    ts = trajectory.timestep
    step_type = np.asarray(ts.step_type)
    reward, discount = np.asarray(ts.reward, np.float64), np.asarray(ts.discount, np.float64)
    best = np.asarray(q_values, np.float64).max(axis=-1)  # [T + 1, B]
    num_steps, batch = step_type.shape[0] - 1, step_type.shape[1]
    targets = np.zeros((num_steps, batch))
    for b in range(batch):
        following = best[num_steps, b]
        for t in reversed(range(num_steps)):
            bootstrap = best[t + 1, b] if step_type[t + 1, b] == LAST else lam * following + (1 - lam) * best[t + 1, b]
            following = reward_scale * reward[t + 1, b] + gamma * discount[t + 1, b] * bootstrap
            targets[t, b] = following
    return targets


def np_gae(rewards, discounts, values, lambdas):
    """delta_t = r_t + d_t v_{t+1} - v_t; A_t = delta_t + d_t l_t A_{t+1}, A_T = 0 (Schulman et al. 2016)."""
    rewards, discounts, values, lambdas = (np.asarray(x, np.float64) for x in (rewards, discounts, values, lambdas))
    num_steps = rewards.shape[0]
    advantages = np.zeros_like(rewards)
    next_advantage = np.zeros(rewards.shape[1:])
    for t in reversed(range(num_steps)):
        delta = rewards[t] + discounts[t] * values[t + 1] - values[t]
        next_advantage = delta + discounts[t] * lambdas[t] * next_advantage
        advantages[t] = next_advantage
    return advantages


def np_vtrace_sum_form(rewards, discounts, values, log_rhos, lambdas, clip_rho, clip_pg_rho, clip_c):
    """Espeholt et al. 2018, eq. (1), term by term, for every column:

    v_s = V(x_s) + sum_{t=s}^{T-1} (prod_{i=s}^{t-1} d_i c_i) delta_t,  delta_t = rho_t (r_t + d_t V(x_{t+1}) - V(x_t)),

    with rho_t = min(clip_rho, pi/mu), c_i = lambda_i min(clip_c, pi/mu). With a constant discount gamma the
    product is the paper's gamma^{t-s} prod c_i. The policy-gradient advantage (Section 4.2, with lambda as in
    rlax) uses q_s = r_s + d_s (lambda_s v_{s+1} + (1 - lambda_s) V(x_{s+1})), with v_T = V(x_T).
    """
    r, d, v, log_rho, lam = (np.asarray(x, np.float64) for x in (rewards, discounts, values, log_rhos, lambdas))
    num_steps = r.shape[0]
    ratio = np.exp(log_rho)
    rho = np.minimum(clip_rho, ratio)
    c = lam * np.minimum(clip_c, ratio)
    delta = rho * (r + d * v[1:] - v[:-1])
    vs = np.zeros_like(r)
    for s in range(num_steps):
        vs[s] = v[s] + sum(np.prod(d[s:t] * c[s:t], axis=0) * delta[t] for t in range(s, num_steps))
    vs_next = np.concatenate([vs[1:], v[-1:]])
    q = r + d * (lam * vs_next + (1 - lam) * v[1:])
    return vs, np.minimum(clip_pg_rho, ratio) * (q - v[:-1])


def np_vtrace_recursive(rewards, discounts, values, log_rhos, lambdas, clip_rho, clip_pg_rho, clip_c):
    """Remark 1 of the paper: v_s = V(x_s) + delta_s + d_s c_s (v_{s+1} - V(x_{s+1})), v_T = V(x_T)."""
    r, d, v, log_rho, lam = (np.asarray(x, np.float64) for x in (rewards, discounts, values, log_rhos, lambdas))
    num_steps = r.shape[0]
    vs = np.zeros_like(r)
    pg_advantages = np.zeros_like(r)
    next_vs = v[num_steps].copy()
    for s in reversed(range(num_steps)):
        ratio = np.exp(log_rho[s])
        delta = np.minimum(clip_rho, ratio) * (r[s] + d[s] * v[s + 1] - v[s])
        q = r[s] + d[s] * (lam[s] * next_vs + (1 - lam[s]) * v[s + 1])
        pg_advantages[s] = np.minimum(clip_pg_rho, ratio) * (q - v[s])
        vs[s] = v[s] + delta + d[s] * lam[s] * np.minimum(clip_c, ratio) * (next_vs - v[s + 1])
        next_vs = vs[s]
    return vs, pg_advantages


# ---------------------------------------------------------------------------------------------
# The actor-critic objective (actor-critic and IMPALA).


def np_policy_gradient(obs, logits, values, action, valid, advantages, value_targets, *, value_cost, entropy_cost):
    """The actor-critic objective for given advantages and value targets (both constants): loss, metrics, gradient.

    `obs`, `logits`, `values` cover all T + 1 timesteps; the rest are per transition `[T, B]`. The gradient is
    w.r.t. the linear network's params.
    """
    log_probs_all = np_log_softmax(logits[:-1])
    probs = np.exp(log_probs_all)
    log_probs = np.take_along_axis(log_probs_all, action[..., None], -1)[..., 0]
    entropy_all = -(probs * log_probs_all).sum(-1)
    n = valid.size
    policy_loss = -(valid * log_probs * advantages).sum() / n
    value_loss = 0.5 * (valid * (value_targets - values[:-1]) ** 2).sum() / n
    entropy = (valid * entropy_all).sum() / n
    total = policy_loss + value_cost * value_loss - entropy_cost * entropy

    # Gradient: the advantages and the targets are constants.
    one_hot = np.eye(logits.shape[-1])[action]
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


def np_actor_critic(params, trajectory, *, gamma, td_lambda, value_cost, entropy_cost, reward_clip=0.0):
    """Loss, metrics and the analytic gradient of the loss w.r.t. the linear network's params."""
    obs = np.asarray(trajectory.timestep.observation, np.float64)
    logits, values = np_apply(params, obs)
    rewards, discounts, valid, lambdas = np_transitions(trajectory, gamma, td_lambda, reward_clip)
    returns = np_lambda_returns(rewards, discounts, values, lambdas)
    return np_policy_gradient(
        obs,
        logits,
        values,
        np.asarray(trajectory.action),
        valid,
        returns - values[:-1],
        returns,
        value_cost=value_cost,
        entropy_cost=entropy_cost,
    )


def np_impala(
    params, trajectory, *, gamma, vtrace_lambda, clip_rho_threshold, clip_pg_rho_threshold, value_cost, entropy_cost
):
    """Loss, metrics and the analytic gradient w.r.t. the linear network's params, float64, and the log-rhos.

    Policy gradient (Section 4.2): -rho_pg A grad log pi with the advantages and the importance weights constant;
    value gradient: (v - vs) grad v with vs constant. The behaviour policy is `trajectory.extras["logits"]`.
    """
    obs = np.asarray(trajectory.timestep.observation, np.float64)
    logits, values = np_apply(params, obs)
    rewards, discounts, valid, lambdas = np_transitions(trajectory, gamma, vtrace_lambda)
    action = np.asarray(trajectory.action)
    log_probs = np.take_along_axis(np_log_softmax(logits[:-1]), action[..., None], -1)[..., 0]
    behaviour = np_log_softmax(np.asarray(trajectory.extras["logits"], np.float64))
    log_rhos = log_probs - np.take_along_axis(behaviour, action[..., None], -1)[..., 0]
    vs, pg_advantages = np_vtrace_recursive(
        rewards, discounts, values, log_rhos, lambdas, clip_rho_threshold, clip_pg_rho_threshold, 1.0
    )
    total, metrics, grads = np_policy_gradient(
        obs, logits, values, action, valid, pg_advantages, vs, value_cost=value_cost, entropy_cost=entropy_cost
    )
    metrics["mean_rho"] = (valid * np.minimum(clip_rho_threshold, np.exp(log_rhos))).sum() / valid.sum()
    return total, metrics, grads, log_rhos


# ---------------------------------------------------------------------------------------------
# PPO.


def np_ppo(params, batch, *, clip_epsilon, clip_value_loss, value_cost, entropy_cost, normalize_advantages):
    """The PPO loss and metrics on samples (`ppo.Samples`, leaves `[L, M, ...]`, all alike to the loss), float64."""
    fields = ("action", "old_log_prob", "old_value", "advantage", "target_return", "valid")
    b = {k: np.asarray(getattr(batch, k), np.float64).reshape(-1) for k in fields}
    logits, value = np_apply(params, np.asarray(batch.observation, np.float64).reshape(-1, OBS))
    log_probs_all = np_log_softmax(logits)
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


def np_make_samples(params, trajectory, gamma, gae_lambda):
    """GAE (lambda cut at LAST), return targets and behaviour log-probs, float64, as a feed-forward network's
    samples: one row `[1, T * B]` of transitions flattened time-major, with no recurrent state."""
    obs = np.asarray(trajectory.timestep.observation, np.float64)
    _, values = np_apply(params, obs)
    rewards, discounts, valid, lambdas = np_transitions(trajectory, gamma, gae_lambda)
    advantages = np_gae(rewards, discounts, values, lambdas)
    action = np.asarray(trajectory.action)
    behaviour = np_log_softmax(np.asarray(trajectory.extras["logits"], np.float64))
    old_log_prob = np.take_along_axis(behaviour, action[..., None], -1)[..., 0]
    flat = lambda x: x.reshape((1, -1) + x.shape[2:])  # noqa: E731
    return ppo.Samples(
        observation=flat(obs[:-1]),
        first=flat(np.asarray(trajectory.timestep.step_type)[:-1] == FIRST),
        action=flat(action),
        old_log_prob=flat(old_log_prob),
        old_value=flat(values[:-1]),
        advantage=flat(advantages),
        target_return=flat(advantages + values[:-1]),
        valid=flat(valid),
        state=(),
    )


# ---------------------------------------------------------------------------------------------
# Tools.


def np_finite_difference_grad(np_loss, params, eps=1e-6):
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


def close(got, expected, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), expected, rtol=rtol, atol=atol)


def close_loss(total, metrics: dict, np_total, np_metrics: dict) -> None:
    """A loss and its metrics equal the NumPy reference's: the same metric names, each value close."""
    close(total, np_total)
    assert set(metrics) == set(np_metrics)
    for name, value in np_metrics.items():
        close(metrics[name], value, rtol=1e-5, atol=1e-6)


def on_devices(fn, *args, num_devices=1, replicated_args=()):
    """Runs `fn` per device under `jax.shard_map` over `num_devices` devices (pass it `DEVICE_AXIS` as axis name).

    With one device the args are used as they are. With several, every arg except
    those at `replicated_args` positions has a leading device axis that is split
    over the mesh, and the outputs keep that axis.
    """
    mesh = device_mesh(jax.devices()[:num_devices])
    if num_devices == 1:
        return jax.shard_map(fn, mesh=mesh, in_specs=REPLICATED, out_specs=REPLICATED, check_vma=False)(*args)
    sharded = [i not in replicated_args for i in range(len(args))]

    def per_device(*a):
        a = [jax.tree.map(lambda x: x[0], arg) if split else arg for arg, split in zip(a, sharded, strict=True)]
        return jax.tree.map(lambda x: x[None], fn(*a))

    in_specs = tuple(SHARDED if split else REPLICATED for split in sharded)
    return jax.shard_map(per_device, mesh=mesh, in_specs=in_specs, out_specs=SHARDED)(*args)


# ---------------------------------------------------------------------------------------------
# SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications") and TD3 (Fujimoto et al. 2018).


def np_squashed_gaussian_log_prob(mean, log_std, u):
    """log pi(tanh(u)) of a tanh-squashed diagonal Gaussian over the last axis: the Gaussian's log-density of u,
    less sum_i log(1 - tanh(u_i)^2), the log-determinant of the tanh's Jacobian (Appendix C, eq. 21)."""
    mean, log_std, u = (np.asarray(x, np.float64) for x in (mean, log_std, u))
    z = (u - mean) / np.exp(log_std)
    log_gaussian = np.sum(-0.5 * z**2 - log_std - 0.5 * np.log(2.0 * np.pi), axis=-1)
    return log_gaussian - np.sum(np.log(1.0 - np.tanh(u) ** 2), axis=-1)


def np_soft_bellman_target(reward, discount, gamma, target_q, log_prob, alpha):
    """y = r + gamma d (min_i Q'_i(s', a') - alpha log pi(a'|s')), `target_q` `[S, 2]` (eqs. 3 and 5-6, twin
    critics): the soft value of the next state, a' drawn from the current policy."""
    soft_value = np.min(np.asarray(target_q, np.float64), axis=-1) - alpha * np.asarray(log_prob, np.float64)
    return np.asarray(reward, np.float64) + gamma * np.asarray(discount, np.float64) * soft_value


def np_temperature_loss(log_prob, valid, log_alpha, target_entropy):
    """`(J(alpha), dJ/d log alpha)`: J = E[-alpha log pi(a|s) - alpha H_target] over the valid samples (eq. 18),
    alpha = exp(log alpha), so the derivative is J itself."""
    log_prob, valid = np.asarray(log_prob, np.float64), np.asarray(valid, np.float64)
    alpha = np.exp(log_alpha)
    loss = np.sum(valid * (-alpha * log_prob - alpha * target_entropy)) / np.sum(valid)
    return loss, loss


def np_td3_target_action(target_mu, noise, sigma, noise_clip):
    """a' = clip(mu'(s') + clip(sigma noise, -c, c), -1, 1): target policy smoothing (Fujimoto et al. 2018, eq. 14)."""
    epsilon = np.clip(sigma * np.asarray(noise, np.float64), -noise_clip, noise_clip)
    return np.clip(np.asarray(target_mu, np.float64) + epsilon, -1.0, 1.0)


def np_clipped_double_q_target(reward, discount, gamma, target_q):
    """y = r + gamma d min_i Q'_i(s', a'), `target_q` `[S, 2]` (Fujimoto et al. 2018, eq. 10 and Algorithm 1)."""
    smaller = np.min(np.asarray(target_q, np.float64), axis=-1)
    return np.asarray(reward, np.float64) + gamma * np.asarray(discount, np.float64) * smaller
