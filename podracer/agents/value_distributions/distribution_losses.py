"""Distributional targets and losses: C51's projection, the quantile Huber loss, n-step targets, Munchausen's terms.

A target distribution is a set of weighted particles: values `[..., M]` and
weights `[..., M]` that sum to 1. Bootstrapping from one action's
distribution gives C51's atoms with their probabilities, or N quantiles of
weight 1/N each; Munchausen's soft bootstrap gives every action's particles,
each action's weighted by its policy probability (`munchausen_particles`).
`n_step_particles` shifts and scales them by an n-step window's rewards and
discounts (the distributional Bellman operator, Bellemare et al. 2017, eq. 1,
applied over n steps as in Rainbow, Hessel et al. 2018, eq. 3). Then

- C51 (Bellemare et al. 2017, Algorithm 1) projects the particles onto its
  fixed support (`categorical_projection`) and minimises the cross-entropy of
  the network's distribution to it (`categorical_loss`);
- QR-DQN (Dabney et al. 2018a, eq. 10) and IQN (Dabney et al. 2018b, eq. 3)
  regress their quantiles on the particles with the quantile Huber loss
  (`quantile_huber_loss`).
"""

import chex
import jax
import jax.numpy as jnp
import optax

from podracer.agents.learning.returns import n_step_returns


def quantile_midpoints(count: int) -> chex.Array:
    """tau_hat_i = (2i + 1) / (2N), i = 0..N-1: the quantile fractions QR-DQN learns (Dabney et al. 2018a, Lemma 2)."""
    return (2.0 * jnp.arange(count, dtype=jnp.float32) + 1.0) / (2.0 * count)


def categorical_projection(values: chex.Array, weights: chex.Array, support: chex.Array) -> chex.Array:
    """The probabilities `[..., N]` on `support` `[N]` (evenly spaced) of the particles `values`, `weights` `[..., M]`.

    Each particle, clipped to [v_min, v_max], splits its weight between the two
    atoms around it in proportion to its nearness (Bellemare et al. 2017,
    Algorithm 1, lines 7-10), written as the triangle kernel
    max(0, 1 - |v - z_i| / delta_z), which is that split.
    """
    chex.assert_equal_shape([values, weights])
    delta = support[1] - support[0]
    clipped = jnp.clip(values, support[0], support[-1])
    nearness = jnp.clip(1.0 - jnp.abs(clipped[..., None, :] - support[:, None]) / delta, 0.0, 1.0)  # [..., N, M]
    return jnp.sum(nearness * weights[..., None, :], axis=-1)


def categorical_loss(logits: chex.Array, target_probabilities: chex.Array) -> chex.Array:
    """-sum_i m_i log p_i `[...]`: the cross-entropy of the predicted distribution softmax(`logits`) to the projected
    target `m` (Bellemare et al. 2017, Algorithm 1, line 11)."""
    chex.assert_equal_shape([logits, target_probabilities])
    return -jnp.sum(jax.lax.stop_gradient(target_probabilities) * jax.nn.log_softmax(logits), axis=-1)


def quantile_huber_loss(
    quantiles: chex.Array, taus: chex.Array, targets: chex.Array, weights: chex.Array, kappa: float
) -> chex.Array:
    """sum_i sum_j w_j rho^kappa_{tau_i}(T_j - theta_i) `[...]` (Dabney et al. 2018a, eq. 10; 2018b, eq. 3).

    rho^kappa_tau(d) = |tau - 1{d < 0}| L_kappa(d) / kappa, with L_kappa the
    Huber loss of threshold kappa; kappa = 0 is plain quantile regression,
    rho_tau(d) = |tau - 1{d < 0}| |d|. Predictions `quantiles` `[..., N]` at
    fractions `taus` `[..., N]`; target particles `targets`, `weights`
    `[..., M]`, their weights summing to 1 (1/M each: the papers' mean over j).
    """
    chex.assert_equal_shape([quantiles, taus])
    chex.assert_equal_shape([targets, weights])
    errors = jax.lax.stop_gradient(targets)[..., None, :] - quantiles[..., :, None]  # [..., N, M]
    magnitude = jnp.abs(errors) if kappa == 0 else optax.huber_loss(errors, delta=kappa) / kappa
    asymmetry = jnp.abs(taus[..., :, None] - (errors < 0).astype(errors.dtype))
    return jnp.sum(jax.lax.stop_gradient(weights)[..., None, :] * asymmetry * magnitude, axis=(-2, -1))


def n_step_particles(
    rewards: chex.Array, discounts: chex.Array, lambdas: chex.Array, values: chex.Array, weights: chex.Array, n: int
) -> tuple[chex.Array, chex.Array]:
    """The n-step targets `(values, weights)` `[T - n + 1, B, M]` of the particles `[T + 1, B, M]` at each timestep.

    Each window's particles are those of the state it bootstraps from (the
    n-th, or the one where the episode ends inside it), shifted by the
    window's discounted rewards R and scaled by its discount Gamma:
    R + Gamma v (Hessel et al. 2018, eq. 3). R, Gamma and the choice of state
    are `returns.n_step_returns` itself, which is linear in its values: R with
    values 0, Gamma with rewards 0 and values 1, and the bootstrap state's
    particles with rewards 0 and discounts 1, which adds nothing and
    multiplies by nothing, so the particles come through exactly.
    """
    chex.assert_rank([rewards, discounts, lambdas], 2)
    chex.assert_equal_shape([values, weights])
    zeros_like_values = jnp.zeros(values.shape[:2], values.dtype)
    window_rewards = n_step_returns(rewards, discounts, zeros_like_values, lambdas, n)
    window_discounts = n_step_returns(jnp.zeros_like(rewards), discounts, jnp.ones_like(zeros_like_values), lambdas, n)

    def bootstrap(particle: chex.Array) -> chex.Array:
        return n_step_returns(jnp.zeros_like(rewards), jnp.ones_like(discounts), particle, lambdas, n)

    each_particle = jax.vmap(bootstrap, in_axes=-1, out_axes=-1)
    return window_rewards[..., None] + window_discounts[..., None] * each_particle(values), each_particle(weights)


def greedy_particles(particles: chex.Array, particle_weights: chex.Array, action: chex.Array) -> tuple:
    """`(values, weights)` `[T, B, M]`: the particles `[T, B, A, M]` of one action `[T, B]` per timestep (the
    greedy action of the target or, with double Q, the online network)."""
    pick = lambda x: jnp.take_along_axis(x, action[..., None, None], axis=-2)[..., 0, :]  # noqa: E731
    return pick(particles), pick(particle_weights)


def munchausen_policy(q_values: chex.Array, entropy_temperature: float) -> tuple[chex.Array, chex.Array]:
    """`(pi, log pi)` `[..., A]`: the softmax policy of the target network's Q-values at temperature tau
    (Vieillard et al. 2020, eq. 2), computed as a log-softmax so that log pi stays finite."""
    log_policy = jax.nn.log_softmax(q_values / entropy_temperature, axis=-1)
    return jnp.exp(log_policy), log_policy


def munchausen_bonus(log_policy: chex.Array, action: chex.Array, scale: float, temperature: float, clip: float):
    """alpha tau clip(log pi(a_t | s_t), l_0, 0) `[T, B]`: the scaled log-policy Munchausen-DQN adds to each reward
    (Vieillard et al. 2020, eq. 3; `clip` is l_0 < 0), with the policy of the target network."""
    chosen = jnp.take_along_axis(log_policy, action[..., None], axis=-1)[..., 0]
    return scale * temperature * jnp.clip(chosen, clip, 0.0)


def munchausen_particles(
    particles: chex.Array, particle_weights: chex.Array, policy: chex.Array, log_policy: chex.Array, temperature: float
) -> tuple[chex.Array, chex.Array]:
    """The soft bootstrap `(values, weights)` `[T, B, A * M]`: every action's particles `[T, B, A, M]` less
    tau log pi(a), weighted by pi(a) (Vieillard et al. 2020, eq. 3, sum_a' pi(a'|s') (q(s', a') - tau log pi(a'|s'));
    for M-IQN, the same sum over each action's quantiles). An action of probability 0 (illegal) keeps its particles
    unshifted, at weight 0."""
    chex.assert_equal_shape_prefix([particles, policy], policy.ndim)
    shift = jnp.where(policy > 0, temperature * log_policy, 0.0)
    values = particles - shift[..., None]
    weights = particle_weights * policy[..., None]
    flat = lambda x: x.reshape(x.shape[:-2] + (-1,))  # noqa: E731
    return flat(values), flat(weights)
