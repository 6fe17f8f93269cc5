"""A single-agent actor-critic lifted to every agent of a multi-agent environment: IPPO's and MAPPO's structure.

A multi-agent environment (`podracer.envs.multi_agent`) observes, for B
environments of N agents, `local` `[B, N, ...]`, an optional action mask
`[B, N, A]` and an optional global state `[B, ...]`; it takes actions
`[B, N]` and gives rewards and discounts `[B, N]`, with one step type per
environment. `lift` turns that into each agent's own view (`agents_view`): its
local observation and mask, the global state given to every agent and, with
shared parameters, its one-hot id (`actions.AGENT_ID`), with the step type
given to every agent. The single-agent agent then acts and learns on it:

- **Shared parameters** (`share_parameters=True`): one network for every
  agent, the id telling the agents apart. `learn` sees the B x N agents'
  trajectories as one batch of B x N environments, so its loss, a mean over
  the batch, has as gradient the sum over agents of each agent's share
  (1/N of its own mean loss's gradient).
- **Independent parameters**: one network per agent, the learner state stacked
  on a leading agent axis, and `init`, `act` and `learn` `jax.vmap`ped over
  it, so one agent's loss never reaches another's parameters. Each agent's
  `learn` averages its gradients over the devices as a single agent's does.

Every agent acts from its own key, split from its environment's. A recurrent
agent's state is kept per agent, `[B, N, ...]`.
"""

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

from podracer.agents.agent import Agent
from podracer.agents.trajectory import Trajectory
from podracer.envs.actions import AGENT_ID, GLOBAL_STATE
from podracer.envs.timestep import TimeStep


def lift(single: Agent, share_parameters: bool, num_agents: int | None = None) -> Agent:
    """`single` acting and learning for every agent of a multi-agent environment (see the module docstring).

    `num_agents` is needed only by a recurrent agent, whose `initial_state`
    is asked for a batch of environments and must hold a state per agent.
    """

    def init(key: chex.PRNGKey, observation_spec: dict, action_spec: specs.Array) -> Any:
        agents = action_spec.shape[0]
        spec, one_action = agent_observation_spec(observation_spec, share_parameters), agent_action_spec(action_spec)
        if share_parameters:
            return single.init(key, spec, one_action)
        return jax.vmap(lambda agent_key: single.init(agent_key, spec, one_action))(jax.random.split(key, agents))

    def learn(state: Any, trajectory: Trajectory, key: chex.PRNGKey, axis_name=None) -> tuple[Any, dict]:
        view = agents_trajectory(trajectory, share_parameters)
        if share_parameters:
            return single.learn(state, jax.tree.map(merge_agent_axis, view), key, axis_name)
        keys = jax.random.split(key, jax.tree.leaves(view.action)[0].shape[2])
        state, metrics = jax.vmap(single.learn, in_axes=(0, 2, 0, None))(state, view, keys, axis_name)
        return state, jax.tree.map(jnp.mean, metrics)  # Each agent's, averaged over the agents.

    def acting_params(state: Any) -> Any:
        return single.acting_params(state) if share_parameters else jax.vmap(single.acting_params)(state)

    return Agent(
        init=init,
        act=over_agents(single.act, single.recurrent, share_parameters),
        learn=learn,
        acting_params=acting_params,
        initial_state=state_per_agent(single, num_agents),
        greedy_act=over_agents(single.greedy_act, single.recurrent, share_parameters),
    )


def over_agents(act: Callable | None, recurrent: bool, share_parameters: bool) -> Callable | None:
    """A single agent's `act` (or `greedy_act`) for every agent: vmapped along the agent axis, axis 1 of the batch,
    and over the parameters' leading agent axis where they are not shared."""
    if act is None:
        return None
    params_axis = None if share_parameters else 0
    if recurrent:

        def recurrent_act(params, timestep: TimeStep, state, key):
            view = agents_timestep(timestep, 1, share_parameters)
            return jax.vmap(act, in_axes=(params_axis, 1, 1, 1), out_axes=1)(params, view, state, agent_keys(key, view))

        return recurrent_act

    def feed_forward_act(params, observation: dict, key):
        view = agents_view(observation, 1, share_parameters)
        return jax.vmap(act, in_axes=(params_axis, 1, 1), out_axes=1)(params, view, agent_keys(key, view))

    return feed_forward_act


def state_per_agent(single: Agent, num_agents: int | None) -> Callable[[int], Any] | None:
    """The lifted `initial_state`: a recurrent `single`'s state for every agent of each environment, `[B, N, ...]`."""
    if not single.recurrent:
        return None
    if num_agents is None:
        raise ValueError("a recurrent agent lifted to several agents needs num_agents for its initial_state")

    def initial_state(batch_size: int) -> Any:
        state = single.initial_state(batch_size * num_agents)
        return jax.tree.map(lambda x: x.reshape((batch_size, num_agents) + x.shape[1:]), state)

    return initial_state


def agents_view(observation: dict, agent_axis: int, with_id: bool) -> dict:
    """Each agent's observation, the agent axis at `agent_axis` of every leaf: the environment's (its `local`
    entry, mask and so on), the global state (which has no agent axis) given to every agent, and `with_id` each
    agent's one-hot id `AGENT_ID`."""
    agents = jax.tree.leaves({k: v for k, v in observation.items() if k != GLOBAL_STATE})[0].shape[agent_axis]
    view = dict(observation)
    if GLOBAL_STATE in observation:
        view[GLOBAL_STATE] = jax.tree.map(lambda x: broadcast_agents(x, agent_axis, agents), observation[GLOBAL_STATE])
    if with_id:
        lead = jax.tree.leaves(observation)[0].shape[:agent_axis]
        view[AGENT_ID] = jnp.broadcast_to(jnp.eye(agents, dtype=jnp.float32), lead + (agents, agents))
    return view


def agents_timestep(timestep: TimeStep, agent_axis: int, with_id: bool) -> TimeStep:
    """Each agent's timestep (`agents_view` of the observation), the episode's step type given to every agent."""
    agents = timestep.reward.shape[agent_axis]
    return timestep.replace(
        step_type=broadcast_agents(timestep.step_type, agent_axis, agents),
        observation=agents_view(timestep.observation, agent_axis, with_id),
    )


def agents_trajectory(trajectory: Trajectory, with_id: bool) -> Trajectory:
    """Each agent's trajectory: every leaf `[T (+ 1), B, N, ...]`, the agent axis after the batch's."""
    return trajectory.replace(timestep=agents_timestep(trajectory.timestep, 2, with_id))


def broadcast_agents(x: chex.Array, agent_axis: int, agents: int) -> chex.Array:
    """`x` with a new axis of `agents` copies at `agent_axis`."""
    x = jnp.expand_dims(x, agent_axis)
    return jnp.broadcast_to(x, x.shape[:agent_axis] + (agents,) + x.shape[agent_axis + 1 :])


def merge_agent_axis(x: chex.Array) -> chex.Array:
    """`[T, B, N, ...]` -> `[T, B * N, ...]`: the agents of every environment as environments of their own."""
    return x.reshape((x.shape[0], x.shape[1] * x.shape[2]) + x.shape[3:])


def agent_keys(key: chex.PRNGKey, view: Any) -> chex.PRNGKey:
    """One key per agent `[B, N]` from one per environment `[B]`."""
    agents = jax.tree.leaves(view)[0].shape[1]
    return jax.vmap(lambda k: jax.random.split(k, agents))(key)


def agent_observation_spec(observation_spec: dict, with_id: bool) -> dict:
    """One agent's observation spec: the environment's without its leading agent axis (the global state as it
    is), with `with_id` the one-hot id."""
    agents = jax.tree.leaves({k: v for k, v in observation_spec.items() if k != GLOBAL_STATE})[0].shape[0]
    spec = {
        key: value if key == GLOBAL_STATE else jax.tree.map(lambda s: s.replace(shape=s.shape[1:]), value)
        for key, value in observation_spec.items()
    }
    if with_id:
        spec[AGENT_ID] = specs.Array((agents,), np.float32, name=AGENT_ID)
    return spec


def agent_action_spec(action_spec: specs.Array) -> specs.Array:
    """One agent's action spec from the environment's `[N, ...]`: a `DiscreteArray` for integer actions."""
    if np.issubdtype(action_spec.dtype, np.integer):
        return specs.DiscreteArray(int(np.max(action_spec.maximum)) + 1, action_spec.dtype, name="action")
    low = np.broadcast_to(action_spec.minimum, action_spec.shape)[0]
    high = np.broadcast_to(action_spec.maximum, action_spec.shape)[0]
    return specs.BoundedArray(action_spec.shape[1:], action_spec.dtype, low, high, name="action")
