"""Value decomposition: how the agents' chosen action values add up to the team's, Q_tot.

Each agent a acts greedily on its own utility Q_a(tau_a, u_a), which reads
only its observation history tau_a; the team learns Q_tot of the joint action
from the team's reward. A mixer ties the two, in a way that keeps the argmax
of Q_tot the agents' own argmaxes, so decentralised greedy acting is the
greedy joint action:

- **VDN** (Sunehag et al. 2018, "Value-Decomposition Networks For Cooperative
  Multi-Agent Learning", eq. 1): Q_tot = sum_a Q_a (`vdn_mix`).
- **QMIX** (Rashid et al. 2018, "QMIX: Monotonic Value Function Factorisation
  for Deep Multi-Agent Reinforcement Learning", eq. 5 and Section 4.2, Figure 2):
  any Q_tot with dQ_tot/dQ_a >= 0 for every agent (eq. 5). The mixing network
  Q_tot = elu(Q W_1 + b_1) W_2 + b_2 keeps its weights W_1 `[N, E]` and W_2
  `[E]` non-negative (an absolute value), and hypernetworks reading the
  environment's global state s produce them, so Q_tot depends on s in
  non-monotonic ways (`monotonic_mix`, `QMixer`). As the pymarl and JaxMARL
  (`baselines/QLearning/qmix_rnn.py`) code: W_1 and W_2 from two-layer ReLU
  hypernetworks, b_1 from one linear layer, b_2 from a two-layer one of width E.
- **None** (independent Q-learning, Tan 1993): each agent learns its own
  Q_a from its own reward; there is no Q_tot (`MIXERS[0]`).
"""

import chex
import flax.linen as nn
import jax.numpy as jnp

MIXERS = ("none", "vdn", "qmix")


def vdn_mix(q_values: chex.Array) -> chex.Array:
    """Q_tot `[...]` = sum over the agent axis (the last) of the agents' chosen values `[..., N]` (Sunehag et al.
    2018, eq. 1)."""
    return jnp.sum(q_values, axis=-1)


def monotonic_mix(
    q_values: chex.Array, w_1: chex.Array, b_1: chex.Array, w_2: chex.Array, b_2: chex.Array
) -> chex.Array:
    """QMIX's mixing network (Rashid et al. 2018, Section 4.2): Q_tot = elu(Q |W_1| + b_1) . |W_2| + b_2.

    `q_values` `[..., N]`, `w_1` `[..., N, E]`, `b_1` `[..., E]`, `w_2` `[..., E]`, `b_2` `[...]`, as the
    hypernetworks give them for each state. The absolute values keep dQ_tot/dQ_a >= 0 (eq. 5): elu is
    increasing, so every path from Q_a to Q_tot has a non-negative slope.
    """
    chex.assert_equal_shape_prefix([q_values, w_1, b_1, w_2, b_2], b_2.ndim)
    hidden = nn.elu(jnp.einsum("...n,...ne->...e", q_values, jnp.abs(w_1)) + b_1)
    return jnp.einsum("...e,...e->...", hidden, jnp.abs(w_2)) + b_2


def _dense(features: int, init_scale: float) -> nn.Dense:
    """JaxMARL's hypernetwork layers: orthogonal weights of gain `init_scale`, zero biases."""
    return nn.Dense(features, kernel_init=nn.initializers.orthogonal(init_scale), bias_init=nn.initializers.zeros)


class HyperNetwork(nn.Module):
    """Two dense layers with a ReLU between: the state -> one of the mixing network's weights."""

    hidden_size: int
    output_size: int
    init_scale: float

    @nn.compact
    def __call__(self, state: chex.Array) -> chex.Array:
        hidden = nn.relu(_dense(self.hidden_size, self.init_scale)(state))
        return _dense(self.output_size, self.init_scale)(hidden)


class QMixer(nn.Module):
    """QMIX's mixer: Q_tot `[...]` of the agents' chosen values `[..., N]` and the global state `[..., D]`."""

    embedding_size: int = 32  # E, the mixing network's hidden width (JaxMARL's MIXER_EMBEDDING_DIM).
    hypernet_hidden_size: int = 128  # The hypernetworks' hidden width (MIXER_HYPERNET_HIDDEN_DIM).
    init_scale: float = 0.001  # The hypernetworks' orthogonal gain (MIXER_INIT_SCALE).

    @nn.compact
    def __call__(self, q_values: chex.Array, state: chex.Array) -> chex.Array:
        agents, size, scale = q_values.shape[-1], self.embedding_size, self.init_scale
        state = state.reshape(state.shape[: q_values.ndim - 1] + (-1,)).astype(jnp.float32)
        w_1 = HyperNetwork(self.hypernet_hidden_size, agents * size, scale)(state)
        b_1 = _dense(size, scale)(state)
        w_2 = HyperNetwork(self.hypernet_hidden_size, size, scale)(state)
        b_2 = HyperNetwork(size, 1, scale)(state)[..., 0]
        return monotonic_mix(q_values, w_1.reshape(w_1.shape[:-1] + (agents, size)), b_1, w_2, b_2)


def mix(mixer: str, module: QMixer | None, variables, q_values: chex.Array, state: chex.Array | None) -> chex.Array:
    """The mixed values `[..., K]`: the agents' own `[..., N]` for no mixer (K = N), Q_tot `[..., 1]` for VDN and QMIX
    (QMIX's `module` with `variables`, reading the global `state`)."""
    if mixer == "none":
        return q_values
    if mixer == "vdn":
        return vdn_mix(q_values)[..., None]
    return module.apply(variables, q_values, state)[..., None]
