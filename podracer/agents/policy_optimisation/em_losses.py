"""The E-step and M-step losses MPO and V-MPO share, with their dual variables, as pure functions.

Papers: MPO, Abdolmaleki et al. 2018, "Maximum a Posteriori Policy
Optimisation" (ICLR), and its decoupled Gaussian update in Abdolmaleki et al.
2018, "Relative Entropy Regularized Policy Iteration" (arXiv:1812.02256);
V-MPO, Song et al. 2020, "V-MPO: On-Policy Maximum a Posteriori Policy
Optimization for Discrete and Continuous Control" (ICLR).

The dual variables (the temperature eta and the KL multipliers alpha) must
stay positive: each is softplus(x) + 1e-8 of an unconstrained parameter x
(`dual_value`), as Acme's and Stoix's MPO and V-MPO parameterise them, and
the parameter is what the optimiser learns. Every loss here holds the
targets and the values it weighs by constant (`jax.lax.stop_gradient`), so
each gradient reaches only what the paper's loss differentiates.
"""

import chex
import jax
import jax.numpy as jnp

from podracer.devices import collectives

MIN_DUAL = 1e-8  # Added to every softplus'd dual: a dual of exactly 0 would divide by zero (eta) or lose its pull.


def dual_value(param: chex.Array) -> chex.Array:
    """A dual variable, softplus(param) + 1e-8 > 0, from its unconstrained parameter."""
    return jax.nn.softplus(param) + MIN_DUAL


def dual_param(value: float) -> chex.Array:
    """The parameter whose `dual_value` is `value` (> 0): softplus's inverse, value + log(1 - exp(-value))."""
    value = jnp.float32(value)
    return value + jnp.log(-jnp.expm1(-value))


def masked_mean(x: chex.Array, valid: chex.Array) -> chex.Array:
    """The mean of `x` over the entries where `valid` is 1 (0 where none is)."""
    chex.assert_equal_shape([x, valid])
    return jnp.sum(valid * x) / jnp.maximum(jnp.sum(valid), 1.0)


def e_step(
    q_values: chex.Array, log_prior: chex.Array, temperature: chex.Array, epsilon: float, valid: chex.Array, axis: int
) -> tuple[chex.Array, chex.Array, dict]:
    """MPO's non-parametric E-step over the actions along `axis`: `(weights, temperature loss, metrics)`.

    q(a|s) = pi(a|s) exp(Q(s, a) / eta) / sum_b pi(b|s) exp(Q(s, b) / eta) (Abdolmaleki et al. 2018, eq. 8), held
    constant, and the temperature's dual (eq. 9)

        g(eta) = eta epsilon + eta E_s[log sum_a pi(a|s) exp(Q(s, a) / eta)],

    whose minimum is the eta at which E_s KL(q(.|s) || pi(.|s)) = epsilon. `log_prior` is log pi(a|s), shaped as
    `q_values` or broadcast to them; `valid` masks the states (`q_values` without `axis`). The metrics hold that KL.
    """
    tempered = jax.lax.stop_gradient(q_values) / temperature + log_prior
    weights = jax.lax.stop_gradient(jax.nn.softmax(tempered, axis=axis))
    loss = temperature * epsilon + temperature * masked_mean(jax.nn.logsumexp(tempered, axis=axis), valid)
    log_ratio = jnp.where(weights > 0, jnp.log(jnp.where(weights > 0, weights, 1.0)) - log_prior, 0.0)
    kl = jnp.sum(weights * log_ratio, axis=axis)
    return weights, loss, {"kl_e_step": masked_mean(kl, valid), "temperature": temperature}


def sampled_e_step(
    q_values: chex.Array, temperature: chex.Array, epsilon: float, valid: chex.Array
) -> tuple[chex.Array, chex.Array, dict]:
    """`e_step` on N actions sampled from pi per state, `q_values` `[N, S]`: each sample stands for 1/N of pi, so
    q(a_j|s) is the softmax of Q(s, a_j) / eta over the samples and g(eta) = eta epsilon + eta E_s[log (1/N)
    sum_j exp(Q(s, a_j) / eta)] (eqs. 8-9 with pi's samples for its integral)."""
    chex.assert_rank(q_values, 2)
    return e_step(q_values, -jnp.log(q_values.shape[0]), temperature, epsilon, valid, axis=0)


def gathered(x: chex.Array, axis_name: collectives.AxisName) -> chex.Array:
    """`x` flattened, with every device's along `axis_name` before it (one device's alone outside a mesh)."""
    flat = jnp.reshape(x, [-1])
    return flat if axis_name is None else jnp.reshape(jax.lax.all_gather(flat, axis_name), [-1])


def top_half(advantages: chex.Array, valid: chex.Array, axis_name: collectives.AxisName = None) -> chex.Array:
    """1.0 where a valid sample's advantage is among the highest half of all valid samples' on every device.

    V-MPO's selection D~ (Song et al. 2020, Section 4.1: "the top half of advantages in each batch"): the half is
    taken over the whole batch, all devices' shards together, so that a batch split over devices selects what it
    would on one. It keeps the ceil(n / 2) highest of n valid samples (samples tied with the lowest kept are kept).
    """
    chex.assert_equal_shape([advantages, valid])
    scores = jnp.where(valid > 0, jax.lax.stop_gradient(advantages), -jnp.inf)
    every = jnp.sort(gathered(scores, axis_name))[::-1]
    count = jnp.sum(jnp.isfinite(every))
    threshold = every[jnp.maximum((count + 1) // 2 - 1, 0)]
    return ((scores >= threshold) & (valid > 0)).astype(jnp.float32)


def top_half_e_step(
    advantages: chex.Array,
    valid: chex.Array,
    temperature: chex.Array,
    epsilon: float,
    axis_name: collectives.AxisName = None,
) -> tuple[chex.Array, chex.Array, dict]:
    """V-MPO's E-step: `(weights psi, temperature loss, metrics)` over the top half of the batch's advantages.

    psi(s, a) = exp(A(s, a) / eta) / sum_{(s', a') in D~} exp(A(s', a') / eta) on the selected samples D~, 0 on the
    rest (Song et al. 2020, eq. 4), held constant; and the temperature's loss (eq. 5)

        L_eta = eta epsilon_eta + eta log[(1 / |D~|) sum_{D~} exp(A / eta)],

    both over every device's samples together (`top_half`): the weights sum to 1 over the whole batch, and
    the loss is the same on every device.
    """
    selected = top_half(advantages, valid, axis_name)
    tempered = jax.lax.stop_gradient(advantages) / temperature
    every_selected, every_tempered = gathered(selected, axis_name), gathered(tempered, axis_name)
    masked = jnp.where(every_selected > 0, every_tempered, -jnp.inf)
    log_normaliser = jax.nn.logsumexp(masked)
    loss = temperature * epsilon + temperature * (log_normaliser - jnp.log(jnp.sum(every_selected)))
    weights = jax.lax.stop_gradient(selected * jnp.exp(jnp.where(selected > 0, tempered, 0.0) - log_normaliser))
    return weights, loss, {"temperature": temperature, "selected": jnp.sum(every_selected)}


def kl_constraint(kl: chex.Array, alpha: chex.Array, epsilon: float) -> tuple[chex.Array, chex.Array]:
    """`(penalty, multiplier loss)` of the trust region KL <= epsilon, KL already averaged over states.

    The Lagrangian of the M-step's constraint split by what each part trains (Song et al. 2020, eq. 5;
    Abdolmaleki et al. 2018, eq. 11): the policy minimises sg(alpha) KL, the multiplier alpha minimises
    alpha (epsilon - sg(KL)), so alpha grows while the KL exceeds epsilon and shrinks towards 0 while it is below.
    """
    chex.assert_rank(kl, 0)
    return jax.lax.stop_gradient(alpha) * kl, alpha * (epsilon - jax.lax.stop_gradient(kl))


def categorical_kl(old_logits: chex.Array, logits: chex.Array) -> chex.Array:
    """KL(pi_old || pi) `[...]` of two categoricals given by their logits `[..., A]`."""
    chex.assert_equal_shape([old_logits, logits])
    old_log_probs, log_probs = jax.nn.log_softmax(old_logits), jax.nn.log_softmax(logits)
    return jnp.sum(jnp.exp(old_log_probs) * (old_log_probs - log_probs), axis=-1)


def gaussian_kl_mean(old: dict, new: dict) -> chex.Array:
    """KL(N(mu_old, sigma_old) || N(mu, sigma_old)) `[...]`: the KL of the mean alone, sum_d (mu - mu_old)^2 /
    (2 sigma_old^2) (Song et al. 2020, eq. 25; Abdolmaleki et al. 2018b, Section 4.2), diagonal Gaussians given
    by `{"mean", "log_std"}` `[..., D]`."""
    return jnp.sum(0.5 * ((new["mean"] - old["mean"]) * jnp.exp(-old["log_std"])) ** 2, axis=-1)


def gaussian_kl_stddev(old: dict, new: dict) -> chex.Array:
    """KL(N(mu_old, sigma_old) || N(mu_old, sigma)) `[...]`: the KL of the standard deviation alone,
    sum_d log(sigma / sigma_old) + sigma_old^2 / (2 sigma^2) - 1/2 (Song et al. 2020, eq. 26)."""
    log_ratio = new["log_std"] - old["log_std"]
    return jnp.sum(log_ratio + 0.5 * jnp.exp(-2.0 * log_ratio) - 0.5, axis=-1)


def decoupled(old: dict, new: dict) -> tuple[dict, dict]:
    """`(mean-only, stddev-only)` Gaussians: the new mean with the old deviation, the old mean with the new deviation
    (Abdolmaleki et al. 2018b, Section 4.2), each trained through one of the two, the other held constant."""
    old = jax.lax.stop_gradient(old)
    return {"mean": new["mean"], "log_std": old["log_std"]}, {"mean": old["mean"], "log_std": new["log_std"]}
