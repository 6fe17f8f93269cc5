"""The agent interface: a small record of pure functions, the one seam both architectures attach to.

    init(key, observation_spec, action_spec) -> learner_state
    act(params, observation, key) -> (action, extras)                      # feed-forward
    act(params, timestep, state, key) -> (action, extras, state)          # recurrent
    learn(learner_state, trajectory, key, axis_name) -> (learner_state, metrics)
    acting_params(learner_state) -> params
    initial_state(batch_size) -> state                                    # recurrent only
    greedy_act(...)  -> as act, the most likely action                    # optional

Anakin's compiled program and Sebulba's actor threads both act through
`act_with_state` (which calls `act` either way), and both learn through
`learn`; neither has acting or learning code of its own. An agent knows
nothing of devices, meshes or environments until `init` is shown the specs,
so one agent object runs in a notebook, on every core of a TPU slice under
Anakin, and under Sebulba on envpool.

An agent with memory declares `initial_state`: each environment then has a
recurrent state that the architectures carry from step to step (Anakin in
its scan carry, Sebulba's actor threads on their actor device, across
rollouts), and that the trajectory keeps as it was when the unroll began.
Its `act` sees the whole timestep, because it must start the state afresh
where an episode starts (step type FIRST): the architectures never reset it
themselves, so acting, and `learn` replaying a sequence from the stored
state, reset it at exactly the same steps.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import chex

from podracer.agents.trajectory import Trajectory
from podracer.envs.timestep import TimeStep


@dataclasses.dataclass(frozen=True)
class Agent:
    """An agent as pure functions (see the module docstring for the signatures).

    - `init`: the learner state, any pytree the agent needs (parameters,
      optimiser state, target parameters, a replay buffer, counters), from a
      key and one environment's (unbatched) `dm_env` specs.
    - `act`: actions for a batch of observations `[B, ...]` given one key per
      environment (`[B]`, so an environment's actions do not depend on which
      device or batch it shares). `extras` is a pytree of `[B, ...]` arrays the
      trajectory stores at every step: the logits of a categorical policy, the
      mean and log-std of a Gaussian, the search policy of a search agent.
      A recurrent agent's `act` takes the timestep `[B]` and its state
      instead of the observation, resets the state where the step type is
      FIRST, and returns the new state as well.
    - `learn`: one update from a trajectory (`Trajectory`, leaves `[T + 1, B,
      ...]` / `[T, B, ...]`, and the recurrent state at the unroll's start,
      `[1, B, ...]`). `axis_name` names the device axis to average
      gradients over (`podracer.devices.collectives`), or is `None` on one device, so
      `jax.jit(agent.learn)` works with no mesh. `metrics` is a dict of
      scalars, the same on every device.
    - `acting_params`: what `act` needs, taken from the learner state (the
      policy's parameters, plus e.g. observation statistics or an exploration
      schedule's step).
    - `initial_state`: None for a feed-forward agent; for a recurrent one,
      the state `[B, ...]` of `batch_size` environments before their first step.
    - `greedy_act`: `act`'s signature, choosing the policy's most likely action
      (the argmax, a Gaussian's mean, no exploration) instead of sampling; what
      evaluation with `evaluation.greedy` and a greedy exported policy play.
      Optional: an agent without one is evaluated and exported sampling.
    - `remember`: `(learner_state, trajectory) -> learner_state`, the
      trajectory's transitions added to the agent's replay buffer without
      learning from them: how a run that starts from an offline run begins
      with its dataset in the buffer (`offline.start_from`). Only agents that
      learn from a buffer have one.
    """

    init: Callable[[chex.PRNGKey, Any, Any], Any]
    act: Callable[..., tuple]
    learn: Callable[[Any, Trajectory, chex.PRNGKey, str | None], tuple[Any, dict]]
    acting_params: Callable[[Any], Any]
    initial_state: Callable[[int], Any] | None = None
    greedy_act: Callable[..., tuple] | None = None
    remember: Callable[[Any, Trajectory], Any] | None = None

    @property
    def recurrent(self) -> bool:
        return self.initial_state is not None

    def state_for(self, batch_size: int) -> Any:
        """The recurrent state of `batch_size` fresh environments; `()` (no arrays at all) for a feed-forward agent."""
        return self.initial_state(batch_size) if self.recurrent else ()

    def act_with_state(
        self, params: Any, timestep: TimeStep, state: Any, key: chex.PRNGKey, greedy: bool = False
    ) -> tuple[Any, Any, Any]:
        """`(action, extras, state)`: the one way the architectures act, for either kind of agent.

        A feed-forward agent's `act` sees only the observation, and its state
        `()` passes through: the compiled program is the one it always was.
        `greedy` acts with `greedy_act` (evaluation, exported greedy policies).
        """
        act = self.greedy_act if greedy else self.act
        if act is None:
            raise ValueError("this agent has no greedy_act: evaluate or export it sampling (greedy=False)")
        if self.recurrent:
            return act(params, timestep, state, key)
        action, extras = act(params, timestep.observation, key)
        return action, extras, state
