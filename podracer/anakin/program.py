"""The Anakin program: acting, environment steps and learning compiled into one XLA computation.

Per device (pmap-style, under `jax.shard_map` over `DEVICE_AXIS`), one update
is an unroll of T steps (`lax.scan`) over the device's batch of environments
(`vmap`), choosing actions with `agent.act`; then `agent.learn`, which averages
its gradients over the device axis. One dispatch runs up to K updates (a
loop whose length is an argument), so the host only launches programs and
reads metrics. The learner
state is replicated; environment states and actor keys are sharded along the
batch. Parts of the learner state an agent marks `PerDevice` (a replay
buffer) are each device's own, stacked along a leading device axis
(`podracer.devices.per_device`). Every random draw belongs to one environment (its
own key), so the data do not depend on how the batch is split over devices.

A population (`podracer.config.population`) vmaps that per-device program over its
members: every part of the state gains a leading member axis, and each
member's agent is built from its hyperparameters, which the dispatch takes as
arrays `[members]`.
"""

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
from flax import struct
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from podracer.agents import Agent, Trajectory
from podracer.agents.trajectory import with_time_axis
from podracer.anakin.slots import repeat_into_slots, write_at
from podracer.devices import collectives, per_device
from podracer.devices.topology import DEVICE_AXIS, REPLICATED, SHARDED, per_device_program
from podracer.envs import episodes
from podracer.envs.base import Environment
from podracer.envs.timestep import TimeStep
from podracer.envs.wrappers import split_keys
from podracer.offline import experience_log
from podracer.run import finite


@struct.dataclass
class AnakinState:
    learner: Any  # The agent's learner state; replicated, except its PerDevice parts ([D, ...], sharded).
    env_state: Any  # [B, ...], sharded over devices.
    timestep: TimeStep  # [B], sharded: the observation the next action is chosen from.
    agent_state: Any  # [B, ...], sharded: a recurrent agent's state for that action; () for a feed-forward one.
    actor_keys: chex.PRNGKey  # [B], sharded: one key per environment.
    learner_key: chex.PRNGKey  # Replicated.


AgentFor = Callable[[dict], Agent]  # A member's agent from its hyperparameters ({} for a single run).


def state_specs(state: AnakinState, members: int = 0) -> AnakinState:
    """Which parts of the state live on every device and which are split along the batch (or the device axis).

    A population's (`members > 0`) state has a leading member axis, which no device splits.
    """
    specs = AnakinState(
        learner=per_device.partition_specs(state.learner),
        env_state=SHARDED,
        timestep=SHARDED,
        agent_state=SHARDED,
        actor_keys=SHARDED,
        learner_key=REPLICATED,
    )
    if not members:
        return specs
    return jax.tree.map(lambda spec: PartitionSpec(None, *spec), specs, is_leaf=lambda x: isinstance(x, PartitionSpec))


def over_members(fn: Callable, members: int, in_parallel: int = 0) -> Callable:
    """`fn` of one member; for a population (`members > 0`) mapped over a leading member axis of every argument.

    `in_parallel` members at a time are vmapped (0: all of them), and groups
    of them run one after another (`lax.map`). Vmapped members compute the
    same numbers as alone up to float rounding (XLA sums a batch's reductions
    in another order); one at a time, each member's computation is exactly
    its own run's, bitwise.
    """
    if not members:
        return fn
    if in_parallel == 0 or in_parallel >= members:
        return jax.vmap(fn)
    batch_size = in_parallel if in_parallel > 1 else None
    return lambda *args: jax.lax.map(lambda member_args: fn(*member_args), args, batch_size=batch_size)


def members_vmapped(members: int, in_parallel: int) -> bool:
    """Whether `over_members` runs a population's members under `vmap`, all at once or in groups: every way but
    one member at a time. Under `vmap` a `lax.cond` or `lax.switch` whose predicate depends on the member runs
    every branch."""
    return members > 0 and not (in_parallel == 1 and members > 1)


def make_init(
    env: Environment, agent_for: AgentFor, num_envs: int, mesh: Mesh, key: chex.PRNGKey, hyperparameters: dict
) -> Callable:
    """`init(key, hyperparameters) -> AnakinState`, compiled to place the state on the mesh (learner replicated,
    envs sharded).

    `env` is wrapped for training (batched); the agent's `init` sees one
    environment's specs. For a population, `key` and every hyperparameter are
    arrays `[members]`, one per member; the examples given fix their shapes.
    """

    def init_member(key, hyperparameters):
        params_key, env_key, actor_key, learner_key = jax.random.split(key, 4)
        env_state, timestep = env.reset(jax.random.split(env_key, num_envs))
        agent = agent_for(hyperparameters)
        learner = agent.init(params_key, env.observation_spec(), env.action_spec())
        return AnakinState(
            learner=per_device.with_device_axis(learner, mesh.size),
            env_state=env_state,
            timestep=timestep,
            agent_state=agent.state_for(num_envs),
            actor_keys=jax.random.split(actor_key, num_envs),
            learner_key=learner_key,
        )

    return placed_init(init_member, mesh, key, hyperparameters)


def placed_init(init_member: Callable, mesh: Mesh, key: chex.PRNGKey, hyperparameters: dict) -> Callable:
    """`init_member(key, hyperparameters) -> AnakinState` over a population's members, compiled to place the state
    on the mesh (`state_specs`); `key` and `hyperparameters` are examples that fix the shapes."""
    members = key.shape[0] if key.shape else 0
    # Members one after another: a batched QR (orthogonal initialisers) deadlocks on a 1-thread XLA:CPU pool.
    init = over_members(init_member, members, in_parallel=1)
    specs = state_specs(jax.eval_shape(init, key, hyperparameters), members)
    return jax.jit(init, out_shardings=jax.tree.map(lambda spec: NamedSharding(mesh, spec), specs))


def make_per_device_update(env: Environment, agent: Agent, unroll_length: int, record: bool = False) -> Callable:
    """One update on one device's shard: unroll with `agent.act` (`make_unroll`), then `agent.learn`.

    Returns `update(state, _) -> (state, (metrics, completed))`: the agent's
    metrics and the episodes that ended during the unroll, summed over devices;
    with `record`, `(metrics, completed, experience)`, the unroll's steps on this
    shard for the dataset logger (`podracer.offline.experience_log`).
    """
    unroll = make_unroll(env, agent, unroll_length)

    def update(state: AnakinState, _) -> tuple[AnakinState, tuple]:
        state, trajectory, completed = unroll(state)
        learner_key, learn_key = jax.random.split(state.learner_key)
        learner, metrics = agent.learn(state.learner, trajectory, learn_key, DEVICE_AXIS)
        finished = collectives.total(completed, DEVICE_AXIS)
        outputs = (metrics, finished, experience_log.experience(trajectory)) if record else (metrics, finished)
        return state.replace(learner=learner, learner_key=learner_key), outputs

    return update


def make_unroll(env: Environment, agent: Agent, unroll_length: int) -> Callable:
    """`unroll(state) -> (state, trajectory, completed)`: T steps of this shard's environments with `agent.act`.

    The state comes back with its environments, timestep, agent state and
    actor keys advanced (its learner as it was); `completed` are the episodes
    that ended during the unroll, this shard's. A recurrent agent's state
    rides in the scan's carry beside the environments' states, and the
    trajectory keeps it as the unroll began. The unroll writes each timestep
    into the trajectory's `[T + 1]` buffer, which the scan carries, rather
    than stacking T of them and appending the last: one pass less over every
    observation (3% on Catch at 256 x 16).
    """

    def act_and_step(params, carry, keys):
        env_state, timestep, agent_state, t, timesteps = carry
        action, extras, agent_state = agent.act_with_state(params, timestep, agent_state, keys)
        env_state, timestep = env.step(env_state, action)
        timesteps = write_at(timesteps, t + 1, timestep)
        record = (action, extras, env_state.episode_return, env_state.episode_length)
        return (env_state, timestep, agent_state, t + 1, timesteps), record

    def unroll(state: AnakinState) -> tuple[AnakinState, Trajectory, Any]:
        actor_keys, step_keys = split_unroll_keys(state.actor_keys, unroll_length)
        params = agent.acting_params(state.learner)
        empty = jax.tree.map(lambda x: jnp.zeros((unroll_length + 1,) + x.shape, x.dtype), state.timestep)
        carry = (state.env_state, state.timestep, state.agent_state, jnp.int32(0), write_at(empty, 0, state.timestep))
        (env_state, last_timestep, agent_state, _, timesteps), (actions, extras, returns, lengths) = jax.lax.scan(
            lambda carry, keys: act_and_step(params, carry, keys), carry, step_keys
        )
        trajectory = Trajectory(timesteps, actions, extras, with_time_axis(state.agent_state))
        after_steps = jax.tree.map(lambda x: x[1:], timesteps)
        completed = episodes.completed(after_steps, returns, lengths)
        state = state.replace(
            env_state=env_state, timestep=last_timestep, agent_state=agent_state, actor_keys=actor_keys
        )
        return state, trajectory, completed

    return unroll


def split_unroll_keys(actor_keys: chex.PRNGKey, num_steps: int) -> tuple[chex.PRNGKey, chex.PRNGKey]:
    """`(next actor keys [B], acting keys [num_steps, B])`: each environment's draws come from its own key."""
    actor_keys, unroll_keys = split_keys(actor_keys)
    return actor_keys, jnp.swapaxes(jax.vmap(lambda key: jax.random.split(key, num_steps))(unroll_keys), 0, 1)


def make_dispatch(
    env: Environment,
    agent_for: AgentFor,
    unroll_length: int,
    updates_per_dispatch: int,
    mesh: Mesh,
    check_finite: bool = True,
    members: int = 0,
    members_in_parallel: int = 0,
    record: bool = False,
):
    """The program of one dispatch: up to K updates on every device of `mesh`, jitted (compile it with `.lower`).

    `dispatch(state, hyperparameters, updates) -> (state, (metrics, completed,
    finite))` runs `updates` updates (an int32 scalar, 1 to K), so one program
    serves a shorter last dispatch, and a dispatch shortened for
    `max_dispatch_seconds`, without recompiling. Metrics and completed
    episodes are stacked over K slots (identical on every device), of which
    the first `updates` are written (`updates_run` takes them); with
    `check_finite`, `finite` says whether each leaf of the final learner
    state is finite (`podracer.run.finite.leaf_flags`; empty without). A
    population's outputs have a leading member axis; its members run
    `members_in_parallel` at a time (`over_members`). With `record` (a single
    run), the outputs end with every update's steps, `[K, T, B, ...]`, split
    over the devices like the environments, for the dataset logger. The input
    state's buffers are donated.
    """

    def update_for(agent: Agent, data: Any) -> Callable:
        update = make_per_device_update(env, agent, unroll_length, record)
        return lambda state: update(state, None)

    recorded = PartitionSpec(None, None, DEVICE_AXIS) if record else None  # [K, T, B, ...]
    program = make_program(
        update_for, agent_for, updates_per_dispatch, mesh, (), check_finite, members, members_in_parallel, recorded
    )
    return jax.jit(
        lambda state, hyperparameters, updates: program(state, hyperparameters, updates, ()), donate_argnums=0
    )


UpdateFor = Callable[[Agent, Any], Callable]
"""`(agent, data) -> update(state) -> (state, (metrics, completed))`: one update on one device, of data it holds."""


def make_program(
    update_for: UpdateFor,
    agent_for: AgentFor,
    updates_per_dispatch: int,
    mesh: Mesh,
    data_specs: Any,
    check_finite: bool = True,
    members: int = 0,
    members_in_parallel: int = 0,
    recorded_specs: PartitionSpec | None = None,
):
    """`program(state, hyperparameters, updates, data)`: up to K updates `update_for` makes, on every device (see
    `make_dispatch`), of `data` laid out by `data_specs` (a dataset on the devices for offline training, `()` for
    none), which every member of a population shares. With `recorded_specs`, each update's outputs end with what
    it recorded, laid out so. Not jitted: its callers jit it, donating the state."""

    def run_member(state, hyperparameters, updates, data):
        step = update_for(agent_for(hyperparameters), data)
        state = state.replace(learner=per_device.local(state.learner))
        state, (metrics, completed, *recorded) = repeat_into_slots(step, state, updates, updates_per_dispatch)
        flags = finite.leaf_flags(per_device.replicated_part(state.learner)) if check_finite else {}
        return state.replace(learner=per_device.global_(state.learner)), (metrics, completed, flags, *recorded)

    def on_device(state, hyperparameters, updates, data):
        run = over_members(lambda state, varied: run_member(state, varied, updates, data), members, members_in_parallel)
        return run(state, hyperparameters)

    outputs_specs = REPLICATED if recorded_specs is None else (REPLICATED,) * 3 + (recorded_specs,)

    def program(state, hyperparameters, updates, data):
        specs = state_specs(state, members)
        in_specs, out_specs = (specs, REPLICATED, REPLICATED, data_specs), (specs, outputs_specs)
        return per_device_program(on_device, mesh, in_specs, out_specs)(state, hyperparameters, updates, data)

    return program
