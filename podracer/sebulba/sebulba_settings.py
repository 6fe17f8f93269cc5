"""Sebulba's config fields: their defaults and static checks, the updates they make, environment seeds and stepping.

How a config splits the devices into actor and learner devices is
`podracer.devices.device_split`'s.
"""

import jax
from ml_collections import ConfigDict

from podracer import envs
from podracer.config import field_checks
from podracer.config.errors import ConfigError, count
from podracer.envs.host import HostEnvironment
from podracer.run import budget

STEPPINGS = ("auto", "compiled", "host")  # config.env_stepping (see env_stepping).


def add_defaults(config: ConfigDict) -> None:
    # A registered host environment, an envpool task id or gymnasium:ID; kwargs go to its factory (envpool: e.g. num_threads).
    config.env = ConfigDict({"name": "CartPole-v1", "kwargs": ConfigDict()})
    config.actor_device_ids = (0,)  # Positions in jax.local_devices(), disjoint from the learners' unless the
    config.learner_device_ids = ()  # process has one device. () means every device that is not an actor's.
    config.actor_threads_per_device = 2  # Threads take turns on a device, so it never idles.
    config.envs_per_thread = 32  # Each actor thread's batch of host environments.
    config.unroll_length = 20  # T: environment steps per rollout.
    # How actors step envpool's environments: "compiled" runs each rollout, acting and stepping, as one program on
    # the actor device (envpool's XLA interface); "host" steps from Python between act calls, as any host environment;
    # "auto" compiles where the environment allows it and the actor devices are CPUs.
    config.env_stepping = "auto"
    config.policy_lag = 1  # 0: act with the newest parameters; 1: one update behind, overlapping acting and learning.
    config.learner_minibatches = 1  # Sequential updates the learner batch is split into.
    config.queue_size = 1  # Rollouts each actor thread may have waiting for the learner.
    config.log_every_updates = 10
    config.stall_timeout_seconds = 300.0  # Longest any thread may wait for another before the run fails.
    # After SIGINT / SIGTERM, how long the learner may take to finish its update and hand over a checkpoint; past it
    # the run stops without one (the newest earlier checkpoint stands), so that it ends within a spot VM's 30 s notice.
    config.stop_grace_seconds = 20.0


def validate(config: ConfigDict, env_from_config: bool) -> None:
    """Static checks: types and ranges of Sebulba's fields, and the environment's name."""
    field_checks.integers(config, "actor_device_ids", at_least=0, example="(0,)", distinct=True)
    field_checks.integers(config, "learner_device_ids", at_least=0, example="(1,)", non_empty=False, distinct=True)
    for field, example in (
        ("actor_threads_per_device", 2),
        ("envs_per_thread", 32),
        ("learner_minibatches", 1),
        ("queue_size", 1),
        ("log_every_updates", 10),
    ):
        field_checks.integer(config, field, at_least=1, example=example)
    field_checks.number(config, "stall_timeout_seconds", example=300, above=0.0)
    field_checks.number(config, "stop_grace_seconds", example=20, above=0.0)
    field_checks.choice(config, "env_stepping", STEPPINGS)
    envs_in_job = config.replicas * len(config.actor_device_ids) * config.actor_threads_per_device
    envs_in_job *= config.envs_per_thread
    if config.seed + envs_in_job - 1 > field_checks.INT32_MAX:  # Environment i of the job is seeded seed + i.
        raise ConfigError(
            "seed",
            f"the job's {envs_in_job} environments would be seeded {config.seed} to {config.seed + envs_in_job - 1}, "
            f"past {field_checks.INT32_MAX}: environment seeds are 32-bit integers",
            "set --config.seed=0"
            if envs_in_job <= field_checks.INT32_MAX
            else "run fewer environments (envs_per_thread, actor_threads_per_device, actor_device_ids)",
        )
    if isinstance(config.policy_lag, bool) or config.policy_lag not in (0, 1):
        raise ConfigError(
            "policy_lag",
            f"must be 0 or 1, got {config.policy_lag!r}",
            "use 0 (act with the newest parameters) or 1 (one update behind, acting overlaps learning)",
        )
    if env_from_config:
        envs.check(config.env.name, host=True, import_suite=False)  # Tasks are looked up as envs are built.


def env_stepping(config: ConfigDict, env: HostEnvironment, actor_devices: list[jax.Device]) -> str:
    """`compiled` or `host`: how the actors step `env`; `ConfigError` if `config.env_stepping` cannot be had.

    `auto` compiles where the environment can be stepped inside a program
    (`HostEnvironment.compiled_step`) and every actor device is a CPU.
    """
    stepping = config.env_stepping
    if stepping == "host" or (stepping == "auto" and any(device.platform != "cpu" for device in actor_devices)):
        return "host"
    try:
        env.compiled_step()
    except NotImplementedError as error:
        if stepping == "auto":
            return "host"
        raise ConfigError(
            "env_stepping",
            f"'compiled' cannot step {env!r}: {error}",
            "set --config.env_stepping=host (or auto, which compiles only where it can)",
        ) from None
    return "compiled"


def steps_per_update(config: ConfigDict, num_actor_threads: int) -> int:
    """Environment steps per learner update over the whole job, with `num_actor_threads` in each process."""
    return config.unroll_length * config.envs_per_thread * num_actor_threads * jax.process_count()


def num_updates(config: ConfigDict, num_actor_threads: int) -> int:
    """The whole learner updates that cover `total_steps` (`podracer.run.budget`)."""
    return budget.whole_updates(config.total_steps, steps_per_update(config, num_actor_threads))


def rounding_note(config: ConfigDict, num_actor_threads: int) -> str | None:
    """The line a run prints when `total_steps` is not a whole number of updates; None when it is."""
    threads = num_actor_threads * jax.process_count()
    update = f"{count(threads, 'actor thread')} x {config.envs_per_thread} environments x {config.unroll_length} steps"
    return budget.rounding_note(config.total_steps, steps_per_update(config, num_actor_threads), update)


def env_seed(config: ConfigDict, thread: int, num_actor_threads: int, resumes: int) -> int:
    """The seed of actor thread `thread`'s environments (threads numbered across the job; environment i gets + i).

    Every environment of the job gets its own seed, and a run resumed for the
    `resumes`-th time restarts its environments with seeds no earlier start used.
    """
    threads_in_job = num_actor_threads * jax.process_count()
    return config.seed + (resumes * threads_in_job + thread) * config.envs_per_thread
