"""Recurrent experience replay (R2D2) for DQN: stored state, burn-in, and the priority of a sequence.

Kapturowski et al. (2019), "Recurrent Experience Replay in Distributed
Reinforcement Learning", ICLR, Section 3. A recurrent Q-network replayed from
a zero state at an arbitrary step of an episode would learn from states it
never acted in; R2D2 instead

- stores the recurrent state acting had at every step beside the step, and
  starts each sampled sequence from the stored state of its first step
  ("stored state"): the items' `extras[STATE]`, which `from_stored_state`
  turns into the sampled trajectory's initial state;
- unrolls the first `burn_in` steps of a sequence only to warm that state
  ("burn-in"): no loss on them and no gradient through them, the state they
  leave stop-gradient'ed (`online_q_values`); the remaining steps up to
  `sequence_length` are trained, each with its full n-step target
  (`trained_mask`), and the last n sampled steps only supply the bootstraps
  (their outputs carry no gradient either: the backward loop stops short);
- sets a sequence's priority to a mix of the largest and the mean absolute TD
  error of its trained transitions, p = eta max_i |delta_i| + (1 - eta)
  mean |delta|, eta = 0.9 (Section 2.3; `sequence_priorities`).

A sampled sequence may cross an episode boundary of its buffer row (a LAST
step followed by the next episode's FIRST): the core restarts at FIRST, as it
did while acting (`fused_cells.reset_at_first`), so no state crosses into another
episode, and the LAST -> FIRST step is no transition (`transitions(...).valid`)
nor does any n-step target look past the LAST (`transitions(...).lambdas`).
The target network is unrolled over the whole sequence from the same stored
state. With `burn_in = 0` and `sequence_length = 1` (a feed-forward network)
one transition per sequence is trained: DQN as it always was.
"""

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp

from podracer.agents.models import networks
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.trajectory import Trajectory, transitions, with_time_axis
from podracer.envs.timestep import FIRST

STATE = "state"
"""The key of the recurrent state acting was given at a step, in a recurrent DQN's extras and buffer items."""


def stored_state_spec(network: NetworkSettings) -> dict | None:
    """The extras a recurrent DQN keeps in its buffer: `{STATE: one environment's state spec}`; None: feed-forward."""
    if network.core == "none":
        return None
    state = jax.eval_shape(lambda: networks.q_network_state(network, 1))
    return {STATE: jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape[1:], leaf.dtype), state)}


def kept_extras(trajectory: Trajectory) -> Trajectory:
    """The trajectory with only the extras the buffer keeps: the stored state of a recurrent DQN, none otherwise."""
    return trajectory.replace(extras={key: value for key, value in trajectory.extras.items() if key == STATE})


def from_stored_state(trajectory: Trajectory) -> Trajectory:
    """A sampled sequence that starts from the state stored with its first item (`()` for a feed-forward DQN)."""
    first_state = jax.tree.map(lambda leaf: leaf[0], trajectory.extras.get(STATE, ()))
    return trajectory.replace(extras={}, state=with_time_axis(first_state))


def online_q_values(
    params: networks.NetworkParams,
    trajectory: Trajectory,
    burn_in: int,
    unroll_fn: Callable = networks.unroll,
    trained: int | None = None,
) -> Any:
    """The online network's outputs over sampled sequences `[L, S]`, from their initial state: Q-values `[L, S, A]`,
    or what another `unroll_fn(params, state, observation, first)` gives (a distributional network's).

    Only the steps from `burn_in` up to `trained` (the whole sequence by
    default) carry gradient: the first `burn_in` timesteps only warm the state,
    their outputs and the state they leave stop-gradient'ed (Kapturowski et al.
    2019, Section 3); the steps after `trained` only supply the bootstraps'
    actions, so a recurrent network's backward loop stops short of them (a
    feed-forward network's products cover every step at once: it takes the
    sequence whole).
    """
    timestep = trajectory.timestep
    inputs, state, pieces = (timestep.observation, timestep.step_type == FIRST), trajectory.initial_state(), []
    steps = timestep.step_type.shape[0]
    bounds = [0, burn_in, steps if trained is None or not jax.tree.leaves(state) else trained, steps]
    for index, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        if start == stop:
            continue
        piece = jax.tree.map(lambda x, start=start, stop=stop: x[start:stop], inputs)
        state, outputs = unroll_fn(params, state, *piece)
        if index != 1:  # Burn-in, or the bootstrap steps: no gradient.
            state, outputs = jax.lax.stop_gradient((state, outputs))
        pieces.append(outputs)
    return jax.tree.map(lambda *parts: jnp.concatenate(parts), *pieces)


def trained_mask(trajectory: Trajectory, burn_in: int, sequence_length: int) -> chex.Array:
    """1.0 `[sequence_length, S]` where a transition is trained: past the burn-in, and a real one (not LAST -> FIRST)."""
    valid = transitions(trajectory, 1.0).valid[:sequence_length]
    past_burn_in = jnp.arange(sequence_length) >= burn_in
    return valid * past_burn_in[:, None]


def sequence_priorities(td_abs: chex.Array, mask: chex.Array, eta: float) -> chex.Array:
    """eta max |TD| + (1 - eta) mean |TD| `[S]` over each sequence's trained transitions (`td_abs`, `mask` `[L, S]`).

    Written max - (1 - eta)(max - mean), the same mix, so that one trained
    transition's priority is exactly its |TD| (Kapturowski et al. 2019, Section 2.3).
    """
    chex.assert_equal_shape([td_abs, mask])
    masked = td_abs * mask
    largest = jnp.max(masked, axis=0)
    mean = jnp.sum(masked, axis=0) / jnp.maximum(jnp.sum(mask, axis=0), 1.0)
    return largest - (1.0 - eta) * (largest - mean)
