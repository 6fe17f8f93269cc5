"""`agent.name = "learned_rule"`: an agent trained by a learned update rule (LPG, Oh et al. 2020) instead of a
hand-written loss: the Podracer paper's rule "lifted and loaded in a Sebulba agent".

The network is the actor-critic one of `config.network`, with a prediction
vector y(s) of `agent.prediction_size` categories in place of the value
(`networks.ActorCritic`). `learn` is one optax step of `lpg_rule.agent_loss`
(Eq. 2), whose targets come from the meta-network saved at
`agent.rule_checkpoint` (`rule_checkpoint.save_rule`), loaded once when the
agent is built and held fixed. Nothing in it knows the architecture, so the
same agent runs under Anakin and Sebulba.
"""

import os
from typing import Any

from ml_collections import ConfigDict

from podracer.agents import registry
from podracer.agents.agent import Agent
from podracer.agents.algorithms.network_agent import NORMALIZATION_DEFAULTS, one_step_agent
from podracer.agents.meta import lpg_rule, rule_checkpoint
from podracer.agents.trajectory import Trajectory
from podracer.config import field_checks
from podracer.config.errors import ConfigError

_SAVE_ONE = (
    "save one with podracer.agents.meta.rule_checkpoint.save_rule, then pass --config.agent.rule_checkpoint=PATH"
)


def defaults() -> ConfigDict:
    return ConfigDict(
        {
            "gamma": 0.99,  # The discount the meta-network reads (gamma_t of its input).
            "prediction_size": 30,  # m, the categories of y(s): the rule's own (the paper's 30).
            "prediction_cost": 0.5,  # alpha_y of Eq. 2.
            "rule_checkpoint": "",  # The saved rule's folder; must be given.
            **NORMALIZATION_DEFAULTS,
        }
    )


def validate(config: ConfigDict) -> None:
    """The fields' ranges, and a rule at `agent.rule_checkpoint` whose m is `agent.prediction_size`; reads only the
    rule's settings file."""
    field_checks.fraction(config, "agent.gamma", example=0.99)
    field_checks.integer(config, "agent.prediction_size", at_least=1, example=30)
    field_checks.number(config, "agent.prediction_cost", example=0.5, at_least=0.0)
    for field in NORMALIZATION_DEFAULTS:
        field_checks.boolean(config, f"agent.{field}")
    path = field_checks.get(config, "agent.rule_checkpoint")
    if not isinstance(path, str) or not path:
        raise ConfigError("agent.rule_checkpoint", f"must name a saved rule's folder, got {path!r}", _SAVE_ONE)
    if not os.path.isfile(os.path.join(path, rule_checkpoint.SETTINGS_FILE)):
        raise ConfigError("agent.rule_checkpoint", f"{path!r} holds no saved rule", _SAVE_ONE)
    size = rule_checkpoint.read_settings(path).prediction_size
    if size != config.agent.prediction_size:
        raise ConfigError(
            "agent.prediction_size",
            f"is {config.agent.prediction_size}, but the rule at {path!r} reads predictions of size {size}",
            f"set --config.agent.prediction_size={size}",
        )


def build(config: ConfigDict, num_updates: int) -> Agent:
    meta_params, settings = rule_checkpoint.load_rule(config.agent.rule_checkpoint)

    def loss(
        params: Any,
        trajectory: Trajectory,
        *,
        unroll_fn,
        gamma: float,
        prediction_cost: float,
        prediction_size: int,
        rule_checkpoint: str,
    ):
        del prediction_size, rule_checkpoint  # The rule's, read when it was loaded.
        return lpg_rule.agent_loss(
            params,
            meta_params,
            trajectory,
            settings=settings,
            unroll_fn=unroll_fn,
            gamma=gamma,
            prediction_cost=prediction_cost,
        )

    return one_step_agent(config, loss, num_updates, prediction_size=settings.prediction_size)


registry.register("learned_rule", defaults=defaults, build=build, validate=validate)
