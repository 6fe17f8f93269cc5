"""`podracer meta-train`'s config and its checks, and the agents and optimiser the meta-training program is built from.

The program is `podracer.anakin.meta_program`'s, its host loop (dispatch,
records, checkpoints, the rule written at each) `podracer.experiment.meta_run`'s.
This module reads the config (`config.meta`, beside the fields of
`defaults("learned_rule")` that the agents use: `network`, `optimizer`,
`agent.gamma`, `agent.prediction_size`, `agent.prediction_cost`), checks it
before anything is compiled (a `ConfigError` naming the field), and builds the
families, the settings, the rule's agent with its critic, and the
meta-optimiser from it.
"""

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from ml_collections import ConfigDict

from podracer import envs
from podracer.agents.agent import Agent
from podracer.agents.algorithms.network_agent import network_agent
from podracer.agents.learning.optimizer import OPTIMIZERS, OptimizerSettings, make_optimizer, sgd_step
from podracer.agents.learning.returns import lambda_returns
from podracer.agents.meta import lpg_rule
from podracer.agents.meta.meta_gradient_rl import EPS_ROOT
from podracer.agents.models import networks
from podracer.agents.trajectory import transitions
from podracer.anakin import meta_members
from podracer.config import field_checks
from podracer.config.errors import ConfigError
from podracer.config.settings import read
from podracer.devices import xla_cpu
from podracer.experiment import schema

RULE_FOLDER = "rule"  # WORKDIR/rule: the meta-network, as `learned_rule` loads it.


def defaults() -> ConfigDict:
    """A meta-training config: `defaults("learned_rule")` for the agents, and `meta` for the meta-trainer."""
    config = schema.defaults("learned_rule", "anakin")
    config.meta = ConfigDict(
        {
            # (environment name, kwargs, members) per family; members a multiple of the devices.
            "environments": (("lpg_tabular", {"variant": "dense"}, 8),),
            "envs_per_member": 4,  # B: copies of a member's environment, on one layout.
            "inner_updates": 5,  # K: agent updates the meta-gradient goes through.
            "lifetime": (50, 100),  # A lifetime's inner updates, drawn uniformly per lifetime.
            "updates": 100,  # Meta-updates in the run.
            "updates_per_dispatch": 10,  # Meta-updates per program call, between two records.
            "td_lambda": 0.95,  # Of the meta-objective's return and the critic's targets.
            "costs": (0.01, 0.001, 0.001, 0.001),  # Eq. 4's beta_0..3 (H(pi), H(y), pi_hat, y_hat), not the paper's.
            "hidden_size": 32,  # The meta-network's LSTM units (the paper's 256).
            "embedding_size": 16,  # phi's units.
            "optimizer": ConfigDict(  # The meta-optimiser's fields (OptimizerSettings), at its own defaults.
                dataclasses.asdict(OptimizerSettings(learning_rate=1e-3, max_grad_norm=1.0, eps=1e-8))
            ),
        }
    )
    return config


def validate(config: ConfigDict) -> None:
    """Raises `ConfigError` naming the field for any value that cannot work; touches no device, compiles nothing."""
    if "meta" not in config:
        raise ConfigError(
            "meta", "is missing: not a meta-training config", "start from configs/anakin_lpg_gridworlds.py"
        )
    common = ConfigDict({field: value for field, value in config.items() if field != "meta"})
    schema.validate(common, agent_from_config=False, env_from_config=False)  # The fields every run has.
    schema.validate_network_and_optimizer(config)
    field_checks.fraction(config, "agent.gamma", example=0.99)
    field_checks.integer(config, "agent.prediction_size", at_least=1, example=30)
    field_checks.number(config, "agent.prediction_cost", example=0.5, at_least=0.0)
    for field, example in (
        ("envs_per_member", 4),
        ("inner_updates", 5),
        ("updates", 100),
        ("updates_per_dispatch", 10),
    ):
        field_checks.integer(config, f"meta.{field}", at_least=1, example=example)
    field_checks.fraction(config, "meta.td_lambda", example=0.95)
    field_checks.integer(config, "meta.hidden_size", at_least=1, example=32)
    field_checks.integer(config, "meta.embedding_size", at_least=1, example=16)
    field_checks.integers(config, "meta.lifetime", at_least=config.meta.inner_updates, example="(50, 100)")
    low_high = config.meta.lifetime
    if len(low_high) != 2 or low_high[0] > low_high[1]:
        raise ConfigError("meta.lifetime", f"must be (low, high) with low <= high, got {low_high!r}", "e.g. (50, 100)")
    costs = config.meta.costs
    if not (isinstance(costs, tuple) and len(costs) == 4 and all(field_checks.is_number(c, 0.0) for c in costs)):
        raise ConfigError("meta.costs", f"must be 4 numbers >= 0, got {costs!r}", 'e.g. "(0.01, 0.001, 0.001, 0.001)"')
    field_checks.choice(config, "meta.optimizer.name", OPTIMIZERS)
    field_checks.number(config, "meta.optimizer.learning_rate", example=1e-3, above=0.0)
    field_checks.number(config, "meta.optimizer.max_grad_norm", example=1.0, above=0.0)
    if config.optimizer.anneal_lr:
        raise ConfigError(
            "optimizer.anneal_lr", "lifetimes restart the agents' optimiser", "set --config.optimizer.anneal_lr=False"
        )
    if config.meta.optimizer.anneal_lr:
        raise ConfigError(
            "meta.optimizer.anneal_lr",
            "meta-training updates the rule at a constant rate",
            "set --config.meta.optimizer.anneal_lr=False",
        )
    families(config)


def families(config: ConfigDict, devices: int = 1) -> tuple[meta_members.Family, ...]:
    """The families `meta.environments` lists, built; `ConfigError` naming it for an entry that cannot work."""
    built = []
    for i, (name, kwargs, members) in enumerate(entries(config)):
        if members % devices:
            raise ConfigError(
                "meta.environments", f"entry {i} ({name}) has {members!r} members", f"use a multiple of {devices}"
            )
        try:
            env = envs.make(name, **kwargs)  # A ConfigError of an unknown name is a ValueError too.
        except (TypeError, ValueError) as error:
            raise ConfigError(
                "meta.environments", f"entry {i} ({name}): {error}", "see docs/meta-learning.md"
            ) from None
        label = "/".join([name, *map(str, kwargs.values())])
        label += f"#{i}" if any(family.label == label for family in built) else ""
        built.append(meta_members.Family(label, env, members))
    return tuple(built)


def entries(config: ConfigDict) -> tuple[tuple[str, dict, int], ...]:
    """`meta.environments`' `(name, kwargs, members)` entries, checked for their form only (no environment is
    built, so this is safe before JAX starts); `ConfigError` naming the field for one that is not."""
    entries = config.meta.environments
    fix = 'list (name, kwargs, members) entries, e.g. (("lpg_tabular", {"variant": "dense"}, 8),)'
    if not isinstance(entries, tuple) or not entries:
        raise ConfigError("meta.environments", f"must be a non-empty tuple, got {entries!r}", fix)
    for i, entry in enumerate(entries):
        if not (isinstance(entry, tuple) and len(entry) == 3 and isinstance(entry[1], dict)):
            raise ConfigError("meta.environments", f"entry {i} is {entry!r}, not (name, kwargs, members)", fix)
        if not field_checks.is_whole_number(entry[2], 1):
            raise ConfigError("meta.environments", f"entry {i} ({entry[0]}) has {entry[2]!r} members", "use 1 or more")
    return entries


def device_shares(config: ConfigDict) -> xla_cpu.Shares:
    """What a run splits evenly over its devices, each family's members: so `cpu_devices=0` makes a count that
    divides them all (`podracer.devices.xla_cpu.cpu_device_count`)."""
    return xla_cpu.Shares(tuple(members for _, _, members in entries(config)))


def settings(config: ConfigDict) -> meta_members.Settings:
    meta = config.meta
    rule = lpg_rule.RuleSettings(meta.hidden_size, config.agent.prediction_size, meta.embedding_size)
    return meta_members.Settings(
        rule=rule,
        envs_per_member=meta.envs_per_member,
        unroll_length=config.unroll_length,
        inner_updates=meta.inner_updates,
        lifetime=tuple(meta.lifetime),
        gamma=config.agent.gamma,
        prediction_cost=config.agent.prediction_cost,
        costs=tuple(meta.costs),
        td_lambda=meta.td_lambda,
    )


def rule_agent(config: ConfigDict, run_settings: meta_members.Settings) -> Callable:
    """`agent_for(meta_params)`: `learned_rule`'s agent (network, optimiser) learning by the rule eta given, with a
    critic beside it (`with_critic`).

    Its `learn` is one step of `lpg_rule.agent_loss` on the member's own data
    (no average over devices: each member is its own agent), through an Adam
    made differentiable (`eps_root`); it acts with its parameters held constant.
    """
    optimizer = make_optimizer(read(OptimizerSettings, config.optimizer), gradient_steps=1, eps_root=EPS_ROOT)
    hyperparameters = {"gamma": run_settings.gamma, "prediction_cost": run_settings.prediction_cost}

    def agent_for(meta_params: Any):
        def loss(params, trajectory):
            return lpg_rule.agent_loss(
                params,
                meta_params,
                trajectory,
                settings=run_settings.rule,
                unroll_fn=networks.unroll,
                **hyperparameters,
            )

        def learn(state, trajectory, key, axis_name=None):
            del key, axis_name
            return sgd_step(state, trajectory, loss, optimizer, None)

        base = network_agent(config, optimizer, learn, run_settings.rule.prediction_size)
        agent = dataclasses.replace(base, acting_params=lambda state: jax.lax.stop_gradient(base.acting_params(state)))
        return with_critic(agent, config, optimizer, run_settings)

    return agent_for


def with_critic(agent: Agent, config: ConfigDict, optimizer, run_settings: meta_members.Settings) -> Agent:
    """`agent` whose learner state is the pair (agent's, critic's): a value network (`config.network`'s) that each
    `learn` also trains, by TD(lambda) on the same trajectory, with the critic loss of A3C (Mnih et al. 2016),
    1/2 E[(sg(G_t) - v_t)^2]. It is the baseline of the meta-objective only, as LPG's (Oh et al. 2020, Section
    3.3): the agent never reads it, and nothing of the rule flows into it (its update is held constant)."""
    critic = network_agent(config, optimizer, learn=None)  # For its `init`: a policy-and-value network.

    def value_loss(params, trajectory):
        _, values = networks.unroll_trajectory(networks.unroll, params, trajectory)
        tr = transitions(trajectory, run_settings.gamma)
        lambdas = tr.lambdas(run_settings.td_lambda)
        targets = lambda_returns(tr.rewards, tr.discounts, jax.lax.stop_gradient(values), lambdas)
        loss = 0.5 * jnp.mean(tr.valid * (targets - values[:-1]) ** 2)
        return loss, {"critic_loss": loss}

    def init(key, observation_spec, action_spec):
        agent_key, critic_key = jax.random.split(key)
        return agent.init(agent_key, observation_spec, action_spec), critic.init(
            critic_key, observation_spec, action_spec
        )

    def learn(state, trajectory, key, axis_name=None):
        agent_state, critic_state = state
        agent_state, metrics = agent.learn(agent_state, trajectory, key, axis_name)
        critic_state, critic_metrics = sgd_step(critic_state, trajectory, value_loss, optimizer, None)
        critic_state = jax.lax.stop_gradient(critic_state)
        return (agent_state, critic_state), {**metrics, "critic_loss": critic_metrics["critic_loss"]}

    return dataclasses.replace(agent, init=init, learn=learn, acting_params=lambda state: agent.acting_params(state[0]))


def meta_optimizer(config: ConfigDict):
    """The optimiser of the meta-network: `meta.optimizer` as `make_optimizer` reads it (Adam by default)."""
    return make_optimizer(read(OptimizerSettings, config.meta.optimizer), gradient_steps=config.meta.updates)
