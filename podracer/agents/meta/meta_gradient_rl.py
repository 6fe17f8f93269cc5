"""Online meta-gradient RL (Xu, van Hasselt & Silver 2018, "Meta-Gradient Reinforcement Learning", NeurIPS).

The discount gamma, the lambda of the return and the entropy cost of an
actor-critic agent's loss (any subset: `agent.meta_gradient.learn`) are
meta-parameters eta, learned as the agent learns. Each `learn` call, on
trajectory tau_t:

1. Meta-update. The parameters theta_t came from the previous update,
   theta_t = theta_{t-1} + f(tau_{t-1}, theta_{t-1}, eta) (eq. 1), whose
   Jacobian z = d theta_t / d eta was kept (the trace of eq. 4, truncated to
   one update: mu = 0). The validation objective J'(tau_t, theta_t, eta') is
   the agent's own loss with fixed reference meta-parameters eta' (the
   `outer_*` fields: the paper's gamma' and lambda', and an entropy cost)
   on tau_t, the trajectory NEXT after the one theta_t was learned from;
   its meta-gradient is dJ'/d theta_t . z (eq. 2), and an Adam step of
   `learning_rate` on it moves eta (eq. 5), clipped to each value's range.
2. Inner update. One gradient step on tau_t with the new eta, exactly the
   plain agent's (`optimizer.sgd_step`), and its Jacobian z' for the next
   call (`meta_gradient.update_jacobian`, forward mode through the same step).

So nothing but z (one parameter-sized tree per meta-parameter) is carried to
the next call: the learner state keeps its shape from `init` on, checkpoints
and resumes like any other, and at `learning_rate = 0` every update is the
plain agent's, bitwise. The meta-parameters are reported in the metrics
under their own names, with `meta_loss`, the validation objective.
"""

import functools
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct
from ml_collections import ConfigDict

from podracer.agents.learning.optimizer import (
    LearnerState,
    OptimizerSettings,
    make_optimizer,
    mean_gradient,
    sgd_step,
)
from podracer.agents.meta import meta_gradient
from podracer.config import field_checks, loading
from podracer.config.errors import ConfigError
from podracer.config.settings import read

FIELD = "meta_gradient"  # The group of `config.agent` with the settings below.
OUTER = "outer_"  # The fixed reference value eta' of a learnable hyperparameter X is the field outer_X.
# eps_root of the inner optimiser as differentiated (an Adam update has no derivative where a gradient is 0).
EPS_ROOT = 1e-20

loading.register_agent_only_group(
    f"agent.{FIELD}",
    "meta-gradients are learned by the actor_critic and impala agents",
    "set --config.agent.name=actor_critic, or start from configs/anakin_catch_meta_gradient.py",
)


@struct.dataclass
class MetaState:
    values: dict  # {name: float32 scalar}: the meta-parameters as the loss reads them, within their ranges.
    opt_state: Any  # The meta-optimiser's (Adam's).
    jacobian: dict  # {name: parameter tree}: d theta / d value through the last inner update (Xu et al.'s z).


def defaults(lambda_field: str) -> ConfigDict:
    """`config.agent.meta_gradient` of an agent whose return's lambda is `lambda_field`: off (`learn` empty)."""
    return ConfigDict(
        {
            "learn": (),  # Which of gamma, the lambda and entropy_cost are meta-parameters; () is the plain agent.
            "learning_rate": 1e-3,  # Of the Adam meta-optimiser; 0 keeps every value, so the plain agent, bitwise.
            f"{OUTER}gamma": 0.99,  # The validation objective's fixed gamma' ...
            f"{OUTER}{lambda_field}": 1.0,  # ... lambda' ...
            f"{OUTER}entropy_cost": 0.0,  # ... and entropy cost.
        }
    )


def learnable(settings: ConfigDict) -> tuple[str, ...]:
    """The hyperparameters `settings` (an agent's `meta_gradient` group) may learn: those with an `outer_` value."""
    return tuple(field[len(OUTER) :] for field in settings if field.startswith(OUTER))


def learns(agent_config: ConfigDict) -> bool:
    """Whether the agent learns any meta-parameter (`agent.meta_gradient.learn` not empty)."""
    return FIELD in agent_config and bool(agent_config[FIELD].learn)


def validate(config: ConfigDict) -> None:
    """The names to learn, the meta-learning rate and the reference values; `ConfigError` naming the field."""
    field = f"agent.{FIELD}"
    names = learnable(field_checks.get(config, field))
    learn = field_checks.get(config, f"{field}.learn")
    shown = tuple(name for name in names if not name.endswith("_cost"))
    example = f'e.g. --config.{field}.learn="{shown}"'
    if not isinstance(learn, (tuple, list)) or not all(isinstance(name, str) for name in learn):
        raise ConfigError(f"{field}.learn", f"must be a tuple of hyperparameter names, got {learn!r}", example)
    for name in learn:
        if name not in names:
            raise ConfigError(
                f"{field}.learn", f"unknown hyperparameter {name!r}", f"learn any of {list(names)}, {example}"
            )
    if len(set(learn)) != len(learn):
        raise ConfigError(f"{field}.learn", f"{tuple(learn)} repeats a name", f"list each once, {example}")
    field_checks.number(config, f"{field}.learning_rate", example=1e-3, at_least=0.0)
    for name in names:
        low, high = _range(name)
        example = 0.0 if high is None else 0.99
        field_checks.number(config, f"{field}.{OUTER}{name}", example=example, at_least=low, at_most=high)


def _range(name: str) -> tuple[float, float | None]:
    """The values a hyperparameter may take: [0, 1] for a discount or a lambda, >= 0 for a cost."""
    return (0.0, None) if name.endswith("_cost") else (0.0, 1.0)


def _meta_optimizer(settings: ConfigDict) -> optax.GradientTransformation:
    return optax.adam(settings.learning_rate)


def with_meta_state(init: Callable, agent_config: ConfigDict) -> Callable:
    """An agent's `init` whose learner state also holds the meta-parameters at their configured values."""
    settings = agent_config[FIELD]

    def meta_init(key: chex.PRNGKey, observation_spec: Any, action_spec: Any) -> LearnerState:
        state = init(key, observation_spec, action_spec)
        values = {name: jnp.asarray(agent_config[name], jnp.float32) for name in settings.learn}
        jacobian = {name: jax.tree.map(jnp.zeros_like, state.params) for name in settings.learn}
        return state.replace(meta=MetaState(values, _meta_optimizer(settings).init(values), jacobian))

    return meta_init


def make_learn(
    config: ConfigDict, loss_fn: Callable, optimizer: optax.GradientTransformation, num_updates: int, chunk_axis
) -> Callable:
    """`learn(state, trajectory, key, axis_name)`: a meta-update, then the inner update (the module docstring).

    `loss_fn(params, trajectory, **hyperparameters)` is the agent's loss with
    its configured hyperparameters, any of which a keyword overrides.
    """
    settings = config.agent[FIELD]
    outer = {name: settings[f"{OUTER}{name}"] for name in learnable(settings)}
    meta_optimizer = _meta_optimizer(settings)
    smooth = make_optimizer(read(OptimizerSettings, config.optimizer), num_updates, eps_root=EPS_ROOT)

    def inner_update(values, state, trajectory, axis_name, inner_optimizer=optimizer):
        loss = functools.partial(loss_fn, **values)
        return sgd_step(state, trajectory, loss, inner_optimizer, axis_name, chunk_axis)

    def learn(state: LearnerState, trajectory: Any, key: chex.PRNGKey, axis_name=None) -> tuple[LearnerState, dict]:
        del key
        meta = state.meta
        # The meta-gradient's arithmetic sees its inputs through optimisation barriers: XLA cannot merge it with the
        # plain update's (the same network on the same data), which would change how that fuses, and rounds.
        params, batch = jax.lax.optimization_barrier((state.params, trajectory))
        outer_loss = functools.partial(loss_fn, **outer)
        outer_grads, outer_metrics = mean_gradient(outer_loss, params, batch, axis_name, chunk_axis)
        updates, opt_state = meta_optimizer.update(meta_gradient.contract(meta.jacobian, outer_grads), meta.opt_state)
        values = {
            name: jnp.clip(value, *_range(name)) for name, value in optax.apply_updates(meta.values, updates).items()
        }
        new_state, metrics = inner_update(values, state, trajectory, axis_name)
        jacobian = meta_gradient.update_jacobian(
            lambda v, s, b: inner_update(v, s, b, axis_name, smooth),
            *jax.lax.optimization_barrier((values, state, trajectory)),
            lambda s: s.params,
        )
        metrics = {**metrics, **values, "meta_loss": outer_metrics["loss"]}
        return new_state.replace(meta=MetaState(values, opt_state, jacobian)), metrics

    return learn
