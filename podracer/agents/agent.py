"""The agent interface: a small record of pure functions, the one seam both architectures attach to.

    init(key, observation_spec, action_spec) -> learner_state
    act(params, observation, key) -> (action, extras)
    learn(learner_state, trajectory, key, axis_name) -> (learner_state, metrics)
    acting_params(learner_state) -> params

Anakin's compiled program and Sebulba's actor threads both act through
`act`, and both learn through `learn`; neither has acting or learning code of
its own. An agent knows nothing of devices, meshes or environments until
`init` is shown the specs, so one agent object runs in a notebook, on every
core of a TPU slice under Anakin, and under Sebulba on envpool.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import chex

from podracer.agents.trajectory import Trajectory


@dataclasses.dataclass(frozen=True)
class Agent:
    """An agent as four pure functions (see the module docstring for the signatures).

    - `init`: the learner state, any pytree the agent needs (parameters,
      optimiser state, target parameters, a replay buffer, counters), from a
      key and one environment's (unbatched) `dm_env` specs.
    - `act`: actions for a batch of observations `[B, ...]` given one key per
      environment (`[B]`, so an environment's actions do not depend on which
      device or batch it shares). `extras` is a pytree of `[B, ...]` arrays the
      trajectory stores at every step: the logits of a categorical policy, the
      mean and log-std of a Gaussian, the search policy of a search agent.
    - `learn`: one update from a trajectory (`Trajectory`, leaves `[T + 1, B,
      ...]` / `[T, B, ...]`). `axis_name` names the device axis to average
      gradients over (`podracer.runtime.collectives`), or is `None` on one device, so
      `jax.jit(agent.learn)` works with no mesh. `metrics` is a dict of
      scalars, the same on every device.
    - `acting_params`: what `act` needs, taken from the learner state (the
      policy's parameters, plus e.g. observation statistics or an exploration
      schedule's step).
    """

    init: Callable[[chex.PRNGKey, Any, Any], Any]
    act: Callable[[Any, Any, chex.PRNGKey], tuple[chex.Array, Any]]
    learn: Callable[[Any, Trajectory, chex.PRNGKey, str | None], tuple[Any, dict]]
    acting_params: Callable[[Any], Any]
