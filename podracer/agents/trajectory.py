"""The trajectory record both architectures produce and every `learn` consumes.

A trajectory of T transitions over B environments holds T + 1 timesteps: the
observation each action was chosen from, plus the final observation to
bootstrap from. Transition t goes from `timestep[t]` to `timestep[t + 1]`; its
reward and discount are those of `timestep[t + 1]`. With dm_env's auto-reset a
LAST timestep is followed by the FIRST of the next episode; that step is not a
real transition, so it is masked out (`valid`), and return recursions are cut
at every transition into a LAST timestep (`ends_episode`).

A recurrent agent's trajectory also holds its state as the unroll began, from
which `learn` replays the sequence (`initial_state`). It is stored time-major
like every other field, `[1, B, ...]`, so that splitting a trajectory along
its batch axis (over learner devices, into minibatches, into gradient slices)
is one rule for every leaf. A feed-forward agent's state is `()`.
"""

from typing import Any

import chex
import jax
import jax.numpy as jnp
from flax import struct

from podracer.envs.actions import without_entry
from podracer.envs.timestep import LAST, TimeStep


@struct.dataclass
class Trajectory:
    timestep: TimeStep  # Leaves [T + 1, B, ...].
    action: Any  # [T, B, ...]: what `act` chose.
    extras: Any  # Leaves [T, B, ...]: what `act` returned beside the action (e.g. the behaviour policy's logits).
    state: Any = ()  # Leaves [1, B, ...]: the recurrent state `act` was given at the first timestep.

    def initial_state(self) -> Any:
        """The recurrent state at the unroll's start, `[B, ...]`, to replay the sequence from."""
        return jax.tree.map(lambda x: x[0], self.state)


@struct.dataclass
class Transitions:
    """Per-transition views of a trajectory, each `[T, B]`."""

    rewards: chex.Array  # Clipped to [-reward_clip, reward_clip] when reward_clip > 0.
    discounts: chex.Array  # gamma * environment discount.
    valid: chex.Array  # 1.0 for real transitions, 0.0 for the LAST -> FIRST reset step.
    ends_episode: chex.Array  # 1.0 where the next timestep is LAST: a lambda-return must not look past it.

    def lambdas(self, lambda_: float) -> chex.Array:
        """The per-transition lambda of a lambda-return: `lambda_`, cut to 0 where the episode ends."""
        return lambda_ * (1.0 - self.ends_episode)


def transitions(trajectory: Trajectory, gamma: float, reward_clip: float = 0.0) -> Transitions:
    """Rewards, discounts and masks per transition; `reward_clip > 0` clips rewards (Mnih et al. 2015)."""
    step_type = trajectory.timestep.step_type
    chex.assert_rank(step_type, 2)
    chex.assert_equal_shape_prefix([step_type[1:], trajectory.action], 2)
    rewards = trajectory.timestep.reward[1:]
    return Transitions(
        rewards=jnp.where(reward_clip > 0, jnp.clip(rewards, -reward_clip, reward_clip), rewards),
        discounts=gamma * trajectory.timestep.discount[1:],
        valid=(step_type[:-1] != LAST).astype(jnp.float32),
        ends_episode=(step_type[1:] == LAST).astype(jnp.float32),
    )


def with_time_axis(state: Any) -> Any:
    """A recurrent state `[B, ...]` as a trajectory stores it, `[1, B, ...]`."""
    return jax.tree.map(lambda x: x[None], state)


def merge_leading_dims(tree: Any, num_dims: int = 2) -> Any:
    """Reshapes every leaf `[d0, ..., d_{n-1}, ...]` to `[d0 * ... * d_{n-1}, ...]`."""
    return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[num_dims:]), tree)


def without_observed(trajectory: Trajectory, name: str) -> Trajectory:
    """The trajectory without its observations' entry `name`: what a replay buffer keeps where a state is observed
    for a search alone (a Pgx game's `GAME_STATE`, an environment's `ENV_STATE`)."""
    observation = without_entry(trajectory.timestep.observation, name)
    return trajectory.replace(timestep=trajectory.timestep.replace(observation=observation))
