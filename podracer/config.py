"""Experiment configuration: defaults for every field, and validation with actionable errors.

Experiments are `ml_collections` config files under `configs/` (the convention
of flax's examples): each defines `get_config()` starting from `defaults(...)`
and overrides what it needs; the command line overrides any field with
`--config.field=value`. `validate` checks a config against the machine before
anything is compiled and raises `ConfigError` naming the field and the fix.
"""

from typing import Callable

import jax
import numpy as np
from ml_collections import ConfigDict

from podracer import envs
from podracer.agents import AGENTS
from podracer.agents.learner import OPTIMIZERS
from podracer.agents.networks import TORSOS
from podracer.topology import anakin_devices

ARCHITECTURES = ("anakin", "sebulba")
ACTIVATIONS = ("tanh", "relu")


class ConfigError(ValueError):
    """A config value that cannot work; the message names the field and how to fix it."""

    def __init__(self, field: str, problem: str, fix: str):
        super().__init__(f"config.{field}: {problem}; {fix}")
        self.field = field


def defaults(agent: str, architecture: str = "anakin") -> ConfigDict:
    """Every field an experiment with `agent` on `architecture` reads, at sensible values."""
    config = ConfigDict()
    config.architecture = architecture
    config.seed = 0
    config.replicas = 1  # Processes (hosts) in the job; the one value that scales out (see podracer.distributed).
    config.total_steps = 1_000_000  # Environment steps over the whole run (every device, every actor).
    # XLA:CPU threads (see podracer.cpu_threads): one suits Anakin's small networks, 0 (one per core) Sebulba's
    # actor and learner devices sharing the CPU.
    config.cpu_threads = 1 if architecture == "anakin" else 0
    if architecture == "anakin":
        config.env = ConfigDict({"name": "catch", "kwargs": ConfigDict()})
        config.num_devices = 0  # How many local devices to replicate over; 0 means all of them.
        config.num_envs = 64  # Environments in total, split evenly over the devices.
        config.unroll_length = 16  # T: environment steps per update.
        config.updates_per_dispatch = 10  # K: updates compiled into one program call between logs.
    elif architecture == "sebulba":
        config.env = ConfigDict({"name": "CartPole-v1", "kwargs": ConfigDict()})  # An envpool task id.
        config.actor_device_ids = (0,)  # Positions in jax.local_devices(), disjoint from the learners' unless the
        config.learner_device_ids = ()  # process has one device. () means every device that is not an actor's.
        config.actor_threads_per_device = 2  # Threads take turns on a device, so it never idles.
        config.envs_per_thread = 32  # Each actor thread's envpool batch.
        config.envpool_threads = 0  # envpool worker threads per actor thread; 0 means envpool's default.
        config.unroll_length = 20  # T: environment steps per rollout.
        config.policy_lag = 1  # 0: act with the newest parameters; 1: one update behind, overlapping acting and learning.
        config.learner_minibatches = 1  # Sequential updates the learner batch is split into.
        config.queue_size = 1  # Rollouts each actor thread may have waiting for the learner.
        config.log_every_updates = 10
        config.stall_timeout_seconds = 300.0  # Longest any thread may wait for another before the run fails.
    else:
        raise ValueError(f"Unknown architecture {architecture!r}; choose one of {ARCHITECTURES}.")
    config.network = ConfigDict(
        {
            "torso": "mlp",  # One of networks.TORSOS; the pixel torsos read channels, num_blocks, hidden_size.
            "hidden_sizes": (64, 64),
            "activation": "tanh",
            "shared_torso": True,
            "channels": (16, 32, 32),
            "num_blocks": 2,
            "hidden_size": 256,
        }
    )
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
    elif agent == "impala":
        config.agent = ConfigDict(
            {
                "name": agent,
                "gamma": 0.99,
                "vtrace_lambda": 1.0,
                "clip_rho_threshold": 1.0,
                "clip_pg_rho_threshold": 1.0,
                "value_cost": 0.5,
                "entropy_cost": 0.01,
            }
        )
    else:
        raise ValueError(f"Unknown agent {agent!r}; choose one of {AGENTS}.")
    return config


def num_devices(config: ConfigDict) -> int:
    """The number of devices an Anakin run replicates over, across every process of the job."""
    return len(anakin_devices(config.num_devices))


def sebulba_device_ids(config: ConfigDict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The actor and learner device positions of a Sebulba run.

    An empty `learner_device_ids` means every local device the actors do not
    use, or the actors' own device when the process has a single device.
    """
    actors, learners = tuple(config.actor_device_ids), tuple(config.learner_device_ids)
    if not learners:
        learners = tuple(i for i in range(jax.local_device_count()) if i not in actors) or actors
    return actors, learners


def validate(config: ConfigDict) -> None:
    """Raises `ConfigError` for any value that cannot work on this machine. Compiles nothing."""
    _check_choice(config, "architecture", ARCHITECTURES)
    _check_choice(config, "agent.name", AGENTS)
    _check_choice(config, "network.activation", ACTIVATIONS)
    _check_choice(config, "network.torso", TORSOS)
    _check_choice(config, "optimizer.name", OPTIMIZERS)
    _check_positive(config, "unroll_length", "total_steps", "replicas")
    if jax.process_count() != config.replicas:
        raise ConfigError("replicas", f"{config.replicas} processes expected but this job has {jax.process_count()}",
                          "start one process per replica (scripts/launch_local.py, scripts/launch_tpu.sh) or set "
                          f"--config.replicas={jax.process_count()}")
    if config.architecture == "anakin":
        _validate_anakin(config)
    else:
        _validate_sebulba(config)


def _validate_anakin(config: ConfigDict) -> None:
    _check_choice(config, "env.name", envs.names())
    _check_network(config, _make_env(config, lambda: envs.make(config.env.name, **config.env.kwargs)).observation_spec())
    _check_positive(config, "num_envs", "updates_per_dispatch")
    available = jax.device_count()
    if not 0 <= config.num_devices <= available:
        raise ConfigError(
            "num_devices",
            f"{config.num_devices} devices requested but this job has {available} ({jax.default_backend()})",
            f"set --config.num_devices between 1 and {available}, or 0 for all",
        )
    if config.replicas > 1 and config.num_devices not in (0, available):
        raise ConfigError("num_devices", f"a job of {config.replicas} processes replicates over all its devices",
                          "leave --config.num_devices=0")
    devices = num_devices(config)
    _check_divisible(config, "num_envs", devices, "devices")
    _check_ppo_minibatches(config, config.unroll_length * config.num_envs // devices, "unroll_length x num_envs / devices")


def _validate_sebulba(config: ConfigDict) -> None:
    from podracer.envs.envpool_env import is_envpool_task, make_host_env  # Imports envpool only when needed.

    if not is_envpool_task(config.env.name):
        raise ConfigError("env.name", f"{config.env.name!r} is not an envpool task",
                          "use an envpool id such as CartPole-v1, Pong-v5 or Breakout-v5 (envpool.list_all_envs())")
    with _make_env(config, lambda: make_host_env(config.env.name, 1, seed=0, **config.env.kwargs)) as env:
        _check_network(config, env.observation_spec())
    _check_positive(config, "envs_per_thread", "actor_threads_per_device", "learner_minibatches", "queue_size",
                    "log_every_updates", "stall_timeout_seconds")
    if config.envpool_threads < 0:
        raise ConfigError("envpool_threads", f"must be >= 0, got {config.envpool_threads}", "use 0 for envpool's default")
    if config.policy_lag not in (0, 1):
        raise ConfigError("policy_lag", f"must be 0 or 1, got {config.policy_lag}",
                          "use 0 (act with the newest parameters) or 1 (one update behind, acting overlaps learning)")
    available = jax.local_device_count()
    if not config.actor_device_ids:
        raise ConfigError("actor_device_ids", "no devices given", f"name at least one of the devices 0..{available - 1}")
    actors, learners = sebulba_device_ids(config)
    for field, ids in (("actor_device_ids", actors), ("learner_device_ids", learners)):
        if len(set(ids)) != len(ids) or not all(0 <= i < available for i in ids):
            raise ConfigError(field, f"{ids} are not distinct positions among this process's {available} "
                              f"{jax.default_backend()} devices", f"choose distinct ids from 0..{available - 1}")
    if set(actors) & set(learners) and available > 1:
        raise ConfigError("learner_device_ids", f"devices {sorted(set(actors) & set(learners))} are also actor "
                          "devices", "make actor_device_ids and learner_device_ids disjoint (they may share a "
                          "device only when the process has just one), or leave learner_device_ids=() for the rest")
    _check_divisible(config, "envs_per_thread", len(learners), "learner devices")
    per_learner = config.envs_per_thread * config.actor_threads_per_device * len(actors) // len(learners)
    if per_learner % config.learner_minibatches:
        raise ConfigError("learner_minibatches", f"the {per_learner} environments each learner device receives "
                          f"per update do not split into {config.learner_minibatches} equal minibatches",
                          "choose a divisor of that number")
    _check_ppo_minibatches(config, config.unroll_length * per_learner // config.learner_minibatches,
                           "unroll_length x environments per learner device / learner_minibatches")


def _check_positive(config: ConfigDict, *fields: str) -> None:
    for field in fields:
        if _get(config, field) <= 0:
            raise ConfigError(field, f"must be positive, got {_get(config, field)}", f"set --config.{field} >= 1")


def _check_divisible(config: ConfigDict, field: str, parts: int, what: str) -> None:
    if _get(config, field) % parts:
        raise ConfigError(field, f"{_get(config, field)} environments cannot be split evenly over {parts} {what}",
                          f"set --config.{field} to a multiple of {parts}")


def _make_env(config: ConfigDict, make: Callable):
    try:
        return make()
    except (TypeError, ValueError) as error:
        raise ConfigError("env.kwargs", f"{config.env.name} rejects {dict(config.env.kwargs)} ({error})",
                          "pass only the environment's own constructor arguments") from None


def _check_network(config: ConfigDict, observation_spec) -> None:
    """Pixel torsos need stacked uint8 frames and serve the policy and the value together."""
    if config.network.torso == "mlp":
        return
    shape, dtype = getattr(observation_spec, "shape", None), getattr(observation_spec, "dtype", None)
    if shape is None or len(shape) != 3 or dtype != np.uint8:
        raise ConfigError("network.torso", f"{config.network.torso!r} reads stacked uint8 frames [C, H, W], but "
                          f"{config.env.name} observes {shape} {dtype}", "use --config.network.torso=mlp")
    if not config.network.shared_torso:
        raise ConfigError("network.shared_torso", f"the {config.network.torso} torso is shared by policy and value",
                          "set --config.network.shared_torso=True")


def _check_ppo_minibatches(config: ConfigDict, samples: int, how: str) -> None:
    if config.agent.name == "ppo" and samples % config.agent.num_minibatches:
        raise ConfigError(
            "agent.num_minibatches",
            f"{samples} transitions per device ({how}) do not split into {config.agent.num_minibatches} equal minibatches",
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
