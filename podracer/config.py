"""Experiment configuration: defaults for every field, and validation with actionable errors.

Experiments are `ml_collections` config files under `configs/` (the convention
of flax's examples): each defines `get_config()` starting from `defaults(...)`
and overrides what it needs; the command line overrides any field with
`--config.field=value`. `validate` checks a config against the machine before
anything is compiled and raises `ConfigError` naming the field and the fix.
"""

import jax
from ml_collections import ConfigDict

from podracer import envs
from podracer.agents import AGENTS
from podracer.agents.learner import OPTIMIZERS
from podracer.topology import local_devices

ARCHITECTURES = ("anakin",)
ACTIVATIONS = ("tanh", "relu")


class ConfigError(ValueError):
    """A config value that cannot work; the message names the field and how to fix it."""

    def __init__(self, field: str, problem: str, fix: str):
        super().__init__(f"config.{field}: {problem}; {fix}")
        self.field = field


def defaults(agent: str) -> ConfigDict:
    """Every field an Anakin experiment with `agent` reads, at sensible values."""
    config = ConfigDict()
    config.architecture = "anakin"
    config.seed = 0
    config.env = ConfigDict({"name": "catch", "kwargs": ConfigDict()})
    config.num_devices = 0  # How many local devices to replicate over; 0 means all of them.
    config.num_envs = 64  # Environments in total, split evenly over the devices.
    config.unroll_length = 16  # T: environment steps per update.
    config.total_steps = 1_000_000  # Environment steps over the whole run (every device).
    config.updates_per_dispatch = 10  # K: updates compiled into one program call between logs.
    config.network = ConfigDict({"hidden_sizes": (64, 64), "activation": "tanh", "shared_torso": True})
    config.optimizer = ConfigDict(
        {"name": "adam", "learning_rate": 3e-4, "max_grad_norm": 0.5, "eps": 1e-5, "anneal_lr": False}
    )
    if agent == "actor_critic":
        config.agent = ConfigDict(
            {"name": agent, "gamma": 0.99, "td_lambda": 0.9, "value_cost": 0.5, "entropy_cost": 0.01}
        )
    elif agent == "ppo":
        config.agent = ConfigDict(
            {
                "name": agent,
                "gamma": 0.99,
                "gae_lambda": 0.95,
                "num_epochs": 4,
                "num_minibatches": 4,
                "clip_epsilon": 0.2,
                "clip_value_loss": True,
                "normalize_advantages": True,
                "value_cost": 0.5,
                "entropy_cost": 0.01,
            }
        )
    else:
        raise ValueError(f"Unknown agent {agent!r}; choose one of {AGENTS}.")
    return config


def num_devices(config: ConfigDict) -> int:
    """The number of devices the run replicates over."""
    return len(local_devices(config.num_devices))


def validate(config: ConfigDict) -> None:
    """Raises `ConfigError` for any value that cannot work on this machine. Compiles nothing."""
    _check_choice(config, "architecture", ARCHITECTURES)
    _check_choice(config, "agent.name", AGENTS)
    _check_choice(config, "network.activation", ACTIVATIONS)
    _check_choice(config, "optimizer.name", OPTIMIZERS)
    _check_choice(config, "env.name", envs.names())
    try:
        envs.make(config.env.name, **config.env.kwargs)
    except (TypeError, ValueError) as error:
        raise ConfigError("env.kwargs", f"{config.env.name} rejects {dict(config.env.kwargs)} ({error})",
                          "pass only the environment's own constructor arguments") from None
    for field in ("num_envs", "unroll_length", "total_steps", "updates_per_dispatch"):
        if _get(config, field) < 1:
            raise ConfigError(field, f"must be a positive integer, got {_get(config, field)}", f"set --config.{field} >= 1")
    available = jax.local_device_count()
    if not 0 <= config.num_devices <= available:
        raise ConfigError(
            "num_devices",
            f"{config.num_devices} devices requested but this process has {available} ({jax.default_backend()})",
            f"set --config.num_devices between 1 and {available}, or 0 for all",
        )
    devices = num_devices(config)
    if config.num_envs % devices:
        raise ConfigError(
            "num_envs",
            f"{config.num_envs} environments cannot be split evenly over {devices} devices",
            f"set --config.num_envs to a multiple of {devices}",
        )
    if config.agent.name == "ppo":
        samples = config.unroll_length * config.num_envs // devices
        if samples % config.agent.num_minibatches:
            raise ConfigError(
                "agent.num_minibatches",
                f"{samples} transitions per device (unroll_length x num_envs / devices) do not split into "
                f"{config.agent.num_minibatches} equal minibatches",
                "choose a divisor of that number",
            )


def _get(config: ConfigDict, dotted: str):
    value = config
    for part in dotted.split("."):
        value = value[part]
    return value


def _check_choice(config: ConfigDict, field: str, choices) -> None:
    value = _get(config, field)
    if value not in choices:
        raise ConfigError(field, f"unknown value {value!r}", f"choose one of {list(choices)}")
