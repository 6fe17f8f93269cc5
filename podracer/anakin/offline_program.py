"""Anakin's program for training from a dataset: sampling and learning compiled together, no environment stepped.

The dataset is on the devices, split over them (`podracer.offline.sampling`),
and an argument of every dispatch, never part of the state a checkpoint saves.
One update draws a batch of `batch_size` transitions from the whole dataset
with the learner's key, which every device shares, hands each device its
slice and calls `agent.learn` on it, which averages gradients over the
devices as in online training. So an update counts one gradient step, the
batch is the same on any number of devices, and a population's members (each
with its own key) sample their own batches of the one dataset. No episode
ends in training: the run's returns are its periodic evaluation's, played on
the dataset's environment (`podracer.anakin.anakin_evaluation`).
"""

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from podracer.agents import Agent
from podracer.anakin.program import AgentFor, AnakinState, make_program, placed_init
from podracer.devices import per_device
from podracer.devices.topology import DEVICE_AXIS
from podracer.envs.episodes import Completed
from podracer.offline import sampling
from podracer.offline.sampling import DeviceRows


def make_offline_init(
    agent_for: AgentFor, specs: tuple, mesh: Mesh, key: chex.PRNGKey, hyperparameters: dict
) -> Callable:
    """`init(key, hyperparameters) -> AnakinState`: the learner state for the environment's `specs`
    (`(observation_spec, action_spec)`) and the learner's key; no environments."""

    def init_member(key, hyperparameters):
        params_key, learner_key = jax.random.split(key)
        learner = agent_for(hyperparameters).init(params_key, *specs)
        return AnakinState(
            learner=per_device.with_device_axis(learner, mesh.size),
            env_state=(),
            timestep=(),
            agent_state=(),
            actor_keys=(),
            learner_key=learner_key,
        )

    return placed_init(init_member, mesh, key, hyperparameters)


def make_offline_update(agent: Agent, device_rows: DeviceRows, batch_size: int) -> Callable:
    """`update(state) -> (state, (metrics, completed))`: one gradient step of `agent` on a sampled batch."""
    no_episodes = Completed(jnp.zeros((), jnp.int32), jnp.zeros(()), jnp.zeros((), jnp.int32))

    def update(state: AnakinState) -> tuple[AnakinState, tuple[dict, Completed]]:
        learner_key, sample_key, learn_key = jax.random.split(state.learner_key, 3)
        batch = sampling.sample(device_rows, sample_key, batch_size, DEVICE_AXIS)
        learner, metrics = agent.learn(state.learner, batch, learn_key, DEVICE_AXIS)
        return state.replace(learner=learner, learner_key=learner_key), (metrics, no_episodes)

    return update


def make_offline_dispatch(
    agent_for: AgentFor,
    batch_size: int,
    updates_per_dispatch: int,
    mesh: Mesh,
    device_rows: DeviceRows,
    check_finite: bool = True,
    members: int = 0,
    members_in_parallel: int = 0,
) -> Callable:
    """`dispatch(state, hyperparameters, updates, device_rows)`, jitted: as `program.make_dispatch`'s, each update
    a gradient step on a batch sampled from `device_rows` (laid out as `device_rows` is; not donated)."""

    def update_for(agent: Agent, data: Any) -> Callable:
        return make_offline_update(agent, data, batch_size)

    program = make_program(
        update_for,
        agent_for,
        updates_per_dispatch,
        mesh,
        sampling.partition_specs(device_rows),
        check_finite,
        members,
        members_in_parallel,
    )
    return jax.jit(program, donate_argnums=0)
