"""LPG meta-training (Oh et al. 2020, "Discovering Reinforcement Learning Algorithms") as one Anakin program.

A population of LPG agents (policy and prediction y, `learned_rule`'s
network) each lives on an environment of its own, drawn from a list of
families: one environment name and kwargs each, with its number of members.
Families have different observation specs, so the program loops over them in
Python and `vmap`s over each family's members; one meta-network eta serves all.

One meta-update (Algorithm 1 of the paper, truncated, and without its
per-environment bandit over the agents' hyperparameters: their learning
rate and alpha_y are fixed config values):

- K inner updates per member: unroll T steps with the member's policy
  (`program.make_unroll`; the rollout is data, its parameters held constant),
  then one optimiser step of `lpg_rule.agent_loss` (Eq. 2) under eta;
- the meta-objective of the updated agents on a fresh unroll
  (`lpg_rule.meta_objective`, Eq. 3, plus `lpg_rule.regularisers`, Eq. 4),
  differentiated through the K updates by `meta_gradient.meta_gradient`;
- the meta-gradient averaged over the members and the devices
  (`collectives.mean`), and an optimiser step (Adam) on eta;
- lifetimes: at each meta-update's start, a member whose lifetime (inner
  updates, drawn uniformly per lifetime from a range) has run out is
  re-initialised (parameters and optimiser state) on a newly drawn layout of
  its environment; the initial members are such, so the first meta-update
  starts them (the members and their lifetimes: `podracer.anakin.meta_members`).

The validation unroll starts where the K updates left the environments, with
the keys they left: the next meta-update's first unroll replays it exactly.
The baseline of Eq. 3 is, as in the paper, a value function learned
alongside for the meta-gradient only: each member's learner state is the
pair (agent, critic), and each inner update also trains the critic by
TD(lambda) on the same trajectory (`podracer.experiment.meta_train.with_critic`).

The population is sharded over the devices like any Anakin batch: each
device holds `members / devices` of every family (the member axis is split),
the meta-network and its optimiser state are replicated.
"""

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct
from jax.sharding import Mesh, NamedSharding

from podracer.agents.agent import Agent
from podracer.agents.meta import lpg_rule, meta_gradient
from podracer.agents.models import networks
from podracer.agents.trajectory import Trajectory
from podracer.anakin.meta_members import Family, Settings, ended_members, renew_ended
from podracer.anakin.program import make_per_device_update, make_unroll
from podracer.anakin.slots import repeat_into_slots
from podracer.devices import collectives
from podracer.devices.topology import DEVICE_AXIS, REPLICATED, SHARDED, per_device_program
from podracer.envs import wrap_for_training


@struct.dataclass
class MetaState:
    meta_params: Any  # eta, replicated.
    meta_opt_state: Any  # Replicated.
    members: tuple  # One `Member` per family, leaves `[members, ...]`, split over the devices.


def validation_loss(
    meta_params: Any, learner: Any, trajectory: Trajectory, settings: Settings
) -> tuple[jax.Array, dict]:
    """Eq. 3 (as `lpg_rule.meta_objective`) plus Eq. 4 of one updated member on its validation unroll.

    `learner` is the member's (agent, critic) pair: the critic's values are
    the baseline v_t, held constant, and G_t their TD(`settings.td_lambda`) return.
    """
    agent, critic = learner
    _, values = networks.unroll_trajectory(networks.unroll, critic.params, trajectory)
    values = jax.lax.stop_gradient(values)
    shared = {"unroll_fn": networks.unroll, "gamma": settings.gamma}
    objective, metrics = lpg_rule.meta_objective(
        agent.params, trajectory, values, td_lambda=settings.td_lambda, **shared
    )
    penalty, terms = lpg_rule.regularisers(
        agent.params, meta_params, trajectory, settings=settings.rule, costs=settings.costs, **shared
    )
    return objective + penalty, {**metrics, **terms}


def make_meta_update(
    families: tuple[Family, ...],
    agent_for: Any,
    meta_optimizer: optax.GradientTransformation,
    settings: Settings,
    devices: int,
):
    """`meta_update(state) -> (state, outputs)` on one device's shard (under `shard_map`).

    `agent_for(meta_params)` is the agent that learns by the rule eta.
    `outputs`: the meta-loss and its terms, the inner updates' metrics
    (means over members, K and devices) and each family's finished episodes
    (sums), the same on every device.
    """
    local = [family.members // devices for family in families]

    def inner_update(meta_params, anakin_states, _):
        agent = agent_for(meta_params)
        updated = []
        for family, states in zip(families, anakin_states, strict=True):
            update = make_per_device_update(wrap_for_training(family.env), agent, settings.unroll_length)
            updated.append(jax.vmap(lambda state: update(state, None))(states))  # noqa: B023 -- used at once.
        return tuple(state for state, _ in updated), tuple(outputs for _, outputs in updated)

    def outer_loss(meta_params, anakin_states, _):
        agent = agent_for(meta_params)
        losses, terms = [], []
        for family, states in zip(families, anakin_states, strict=True):
            unroll = make_unroll(wrap_for_training(family.env), agent, settings.unroll_length)

            def member_loss(state, unroll=unroll):
                _, trajectory, _ = unroll(state)
                return validation_loss(meta_params, state.learner, trajectory, settings)

            loss, member_terms = jax.vmap(member_loss)(states)
            losses.append(jnp.sum(loss))
            terms.append(jax.tree.map(jnp.sum, member_terms))
        mean = lambda parts: sum(parts) / sum(local)  # noqa: E731 -- over every member of this device.
        return mean(losses), {"meta_loss": mean(losses), **jax.tree.map(lambda *xs: mean(xs), *terms)}

    gradient = meta_gradient.meta_gradient(inner_update, outer_loss)

    def meta_update(state: MetaState) -> tuple[MetaState, dict]:
        agent = agent_for(state.meta_params)
        members = [renew_ended(f, agent, settings, m) for f, m in zip(families, state.members, strict=True)]
        anakin_states = tuple(member.anakin for member in members)
        steps = jnp.zeros(settings.inner_updates)  # The K batches: each update unrolls its own data.
        grads, (anakin_states, aux, inner) = gradient(state.meta_params, anakin_states, steps, None)
        grads = collectives.mean(grads, DEVICE_AXIS)
        updates, meta_opt_state = meta_optimizer.update(grads, state.meta_opt_state, state.meta_params)
        meta_params = optax.apply_updates(state.meta_params, updates)
        members = tuple(
            member.replace(anakin=anakin, age=member.age + settings.inner_updates)
            for member, anakin in zip(members, anakin_states, strict=True)
        )
        outputs = summary(families, aux, inner, grads)
        return MetaState(meta_params, meta_opt_state, members), outputs

    return meta_update


def summary(families: tuple[Family, ...], aux: dict, inner: tuple, grads: Any) -> dict:
    """A meta-update's outputs, the same on every device: means of the losses, sums of the finished episodes."""
    metrics = [jax.tree.map(jnp.mean, agent_metrics) for agent_metrics, _ in inner]
    agent_metrics = {f"agent_{name}": sum(m[name] for m in metrics) / len(metrics) for name in metrics[0]}
    scalars = collectives.mean({**aux, **agent_metrics, "meta_grad_norm": optax.tree.norm(grads)}, DEVICE_AXIS)
    # Each member's episodes are already summed over the devices (`make_per_device_update`): sum members and K.
    episodes = {f.label: jax.tree.map(jnp.sum, completed) for f, (_, completed) in zip(families, inner, strict=True)}
    return {"scalars": scalars, "episodes": episodes}


def state_specs(state: MetaState) -> MetaState:
    """The meta-network and its optimiser state replicated, the members split along their leading axis."""
    return MetaState(
        meta_params=jax.tree.map(lambda _: REPLICATED, state.meta_params),
        meta_opt_state=jax.tree.map(lambda _: REPLICATED, state.meta_opt_state),
        members=jax.tree.map(lambda _: SHARDED, state.members),
    )


def init_keys(key: jax.Array, families: tuple[Family, ...]) -> tuple[jax.Array, list[jax.Array]]:
    """What `make_init`'s state draws from `key`: the meta-network's key, and one key per family for its members."""
    rule_key, *family_keys = jax.random.split(key, 1 + len(families))
    return rule_key, family_keys


def initial_rule(key: jax.Array, families: tuple[Family, ...], settings: Settings) -> Any:
    """The meta-network eta of `make_init`'s state for `key`: the rule before any meta-update."""
    return lpg_rule.init_rule(init_keys(key, families)[0], settings.rule)


def make_init(families, agent: Agent, meta_optimizer, settings: Settings, mesh: Mesh):
    """`init(key) -> MetaState`, compiled to place the state on the mesh (`state_specs`).

    Its members are placeholders whose lifetime has ended (zeros, each with
    its own key): the first meta-update starts them (`renew_ended`), so the
    program that starts a lifetime is compiled once, inside the dispatch.
    """

    def init(key):
        meta_params = initial_rule(key, families, settings)
        _, family_keys = init_keys(key, families)
        members = tuple(
            ended_members(family, agent, settings, jax.random.split(family_key, family.members))
            for family, family_key in zip(families, family_keys, strict=True)
        )
        return MetaState(meta_params, meta_optimizer.init(meta_params), members)

    specs = state_specs(jax.eval_shape(init, jax.random.key(0)))
    return jax.jit(init, out_shardings=jax.tree.map(lambda spec: NamedSharding(mesh, spec), specs))


def make_dispatch(families, agent_for, meta_optimizer, settings: Settings, mesh: Mesh, updates_per_dispatch: int):
    """`dispatch(state, updates) -> (state, outputs)`: `updates` (1 to U) meta-updates, outputs stacked over U slots.

    The number of meta-updates is an argument, so a shorter last dispatch needs
    no other program. The input state's buffers are donated.
    """
    # Jitted so that its trace for `eval_shape` (the outputs' slots) is the loop's too: traced once, not twice.
    meta_update = jax.jit(make_meta_update(families, agent_for, meta_optimizer, settings, mesh.size))

    def on_device(state, updates):
        return repeat_into_slots(meta_update, state, updates, updates_per_dispatch)

    def dispatch(state, updates):
        specs = state_specs(state)
        return per_device_program(on_device, mesh, (specs, REPLICATED), (specs, REPLICATED))(state, updates)

    return jax.jit(dispatch, donate_argnums=0)
