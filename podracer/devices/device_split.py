"""Where devices get split: which devices a run uses, and for what, from its config.

Anakin replicates one program over the first `num_devices` devices of the
job, each taking an equal share of the environments (`anakin_devices`).
Sebulba splits each process's devices into actor devices (inference for the
actor threads) and learner devices (the replicated update), and every learner
device receives an equal shard of every actor thread's batch
(`sebulba_device_ids`). Both check the config against this machine and raise
a `ConfigError` naming the field and the fix, before anything is compiled.

The same split sizes a device-resident replay buffer: an agent that keeps one
(`podracer.agents.learning.replay`) gives it a row per environment whose steps reach
its device (`environments_per_learner_device`), which Sebulba's learner may
split over several sequential `learn` calls per update (`learner_minibatches`).
"""

import jax
from ml_collections import ConfigDict

from podracer.config.errors import ConfigError, count
from podracer.devices.xla_cpu import device_count_origin


def anakin_devices(config: ConfigDict) -> list[jax.Device]:
    """The devices the run replicates over; raises `ConfigError` where this machine cannot give them."""
    available = jax.device_count()
    if config.num_devices > available:
        raise ConfigError(
            "num_devices",
            f"{config.num_devices} devices requested but this job has {available} ({jax.default_backend()})",
            f"set --config.num_devices between 1 and {available}, or 0 for all",
        )
    if config.replicas > 1 and config.num_devices not in (0, available):
        raise ConfigError(
            "num_devices",
            f"a job of {config.replicas} processes replicates over all its devices",
            "leave --config.num_devices=0",
        )
    chosen = _first_devices(config.num_devices)
    if config.num_envs % len(chosen):
        raise ConfigError(
            "num_envs",
            f"{config.num_envs} environments cannot be split evenly over {len(chosen)} devices",
            f"set --config.num_envs to a multiple of {len(chosen)}",
        )
    return chosen


def replication_line(config: ConfigDict, devices: list[jax.Device], share: str) -> str:
    """The line an Anakin run starts with: how many devices it replicates over, what `share` each one holds, and,
    on XLA:CPU devices, where their count came from (`podracer.devices.xla_cpu`)."""
    platform = devices[0].platform
    origin = f" ({device_count_origin(config)})" if platform == "cpu" else ""
    return f"podracer: replicating over {count(len(devices), f'{platform} device')}{origin}, {share} each"


def sebulba_device_ids(config: ConfigDict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The actor and learner device positions among this process's devices; raises `ConfigError` if impossible.

    An empty `learner_device_ids` means every local device the actors do not
    use, or the actors' own device when the process has a single device.
    """
    available = jax.local_device_count()
    actors = tuple(config.actor_device_ids)
    learners = tuple(config.learner_device_ids)
    if not learners and available > 1 and set(range(available)) <= set(actors):
        raise ConfigError(
            "actor_device_ids",
            f"{actors} are all {available} devices of this process, which leaves none to learn on",
            "leave at least one device out of actor_device_ids (learner_device_ids=() takes the rest), "
            "or share one device only on a one-device process",
        )
    learners = learners or tuple(i for i in range(available) if i not in actors) or actors
    for field, ids in (("actor_device_ids", actors), ("learner_device_ids", learners)):
        if not all(i < available for i in ids):
            raise ConfigError(
                field,
                f"{ids} are not all positions among this process's {available} {jax.default_backend()} devices",
                f"choose distinct ids from 0..{available - 1}",
            )
    if set(actors) & set(learners) and available > 1:
        raise ConfigError(
            "learner_device_ids",
            f"devices {sorted(set(actors) & set(learners))} are also actor devices",
            "make actor_device_ids and learner_device_ids disjoint (they may share a "
            "device only when the process has just one), or leave learner_device_ids=() for the rest",
        )
    if config.envs_per_thread % len(learners):
        raise ConfigError(
            "envs_per_thread",
            f"{config.envs_per_thread} environments cannot be split evenly over {len(learners)} learner devices",
            f"set --config.envs_per_thread to a multiple of {len(learners)}",
        )
    per_learner = environments_per_learner(config, actors, learners)
    if per_learner % config.learner_minibatches:
        raise ConfigError(
            "learner_minibatches",
            f"the {per_learner} environments each learner device receives "
            f"per update do not split into {config.learner_minibatches} equal minibatches",
            "choose a divisor of that number",
        )
    return actors, learners


def environments_per_learner(config: ConfigDict, actors: tuple[int, ...], learners: tuple[int, ...]) -> int:
    """The environments whose steps each learner device receives per update (before `learner_minibatches`)."""
    return config.envs_per_thread * config.actor_threads_per_device * len(actors) // len(learners)


def environments_per_learner_device(config: ConfigDict) -> int:
    """The environments whose steps reach each device per update, for the architecture `config` names.

    Each `learn` call receives `1 / learn_calls_per_update(config)` of them.
    """
    if config.architecture == "anakin":
        return config.num_envs // len(anakin_devices(config))
    return environments_per_learner(config, *sebulba_device_ids(config))


def learn_calls_per_update(config: ConfigDict) -> int:
    """How many sequential `learn` calls share each update's environments: Sebulba's `learner_minibatches`, or 1."""
    return config.learner_minibatches if config.architecture == "sebulba" else 1


def _first_devices(num_devices: int) -> list[jax.Device]:
    """The first `num_devices` devices of the job (every process's, process by process); 0 means all."""
    devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    return devices if num_devices == 0 else devices[:num_devices]
