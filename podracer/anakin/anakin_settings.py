"""Anakin's config fields: their defaults and static checks, the updates they make and how many go in a dispatch.

Which devices a config uses is `podracer.devices.device_split`'s.
"""

import math

from ml_collections import ConfigDict

from podracer import envs
from podracer.anakin.program import members_vmapped
from podracer.config import field_checks, population
from podracer.config.errors import ConfigError
from podracer.devices import xla_cpu
from podracer.envs import env_registry
from podracer.offline import offline_settings
from podracer.run import budget

SMALLEST_CPU_DEVICE_BATCH = 64  # Environments: `cpu_devices=0` splits no smaller (`device_shares`).


def add_defaults(config: ConfigDict) -> None:
    # name: podracer.envs.names(), or SUITE:TASK (gymnax:, brax:). reset_fraction: the share of the batch a step
    # resets alone, the rest at once (podracer.envs.wrappers.AutoReset); 0 takes the environment's (env_registry).
    config.env = ConfigDict({"name": "catch", "kwargs": ConfigDict(), "reset_fraction": 0.0})
    config.num_devices = 0  # How many devices to replicate over; 0 means all of them.
    config.num_envs = 64  # Environments in total, split evenly over the devices.
    config.unroll_length = 16  # T: environment steps per update.
    # K: updates compiled into one program call, between two log records. 0 derives it from log_records.
    config.updates_per_dispatch = 0
    config.log_records = 100  # With updates_per_dispatch 0: about how many log records the run writes.
    # A dispatch slower than this is shortened, so that SIGTERM is honoured within a spot VM's notice.
    config.max_dispatch_seconds = 20.0
    # A population's members vmapped at once (0: all; k: groups of k, one group after another, in less memory).
    # 1 runs each member exactly as it would run alone, bitwise; vmapped members agree with it up to float rounding.
    config.members_in_parallel = 0


def validate(config: ConfigDict, env_from_config: bool) -> None:
    """Static checks: types and ranges of Anakin's fields, and the environment's name."""
    field_checks.integer(config, "num_devices", at_least=0)
    field_checks.integer(config, "num_envs", at_least=1, example=64)
    field_checks.integer(config, "updates_per_dispatch", at_least=0, example=10)
    field_checks.integer(config, "log_records", at_least=1, example=100)
    field_checks.number(config, "max_dispatch_seconds", example=20, above=0.0)
    field_checks.integer(config, "members_in_parallel", at_least=0, example=8)
    if not field_checks.is_number(field_checks.get(config, "env.reset_fraction"), at_least=0.0, at_most=1.0):
        raise ConfigError(
            "env.reset_fraction",
            f"must be a share of the batch in (0, 1], or 0 for the environment's default, "
            f"got {config.env.reset_fraction!r}",
            "set e.g. --config.env.reset_fraction=0.0625 (a step resets up to 1/16 of the batch alone), "
            "1 (the whole batch whenever one needs it) or 0",
        )
    if env_from_config:
        envs.check(config.env.name, host=False, import_suite=False)  # Tasks are looked up as envs are built.


def device_shares(config: ConfigDict) -> xla_cpu.Shares:
    """What a run splits evenly over its devices, its environments, and the fewest a device made from a core gets.

    On the 2-core CI machine (docs/benchmarks.md) a second device of 256 Catch
    environments adds half again, but at CleanRL's 4 CartPole PPO environments
    per device the devices' meeting at every gradient all-reduce costs more
    than the second core gives. The floor of 64 lies between the two; the
    counts between were not measured apart from the host's noise. A
    population's vmapped members step their environments as one batch, so
    the floor is on a device's environments of all of them together: 64
    CartPole PPO trials of 4 environments each (a sweep) use both cores.
    """
    vmapped = config.members_in_parallel or population.size(config) or 1  # A population's members share a batch.
    return xla_cpu.Shares((config.num_envs,), smallest=math.ceil(SMALLEST_CPU_DEVICE_BATCH / vmapped))


def reset_fraction(config: ConfigDict) -> float:
    """`env.reset_fraction`, or with 0 the environment's default (`podracer.envs.env_registry.reset_fraction`).

    A population whose members are vmapped (`program.members_vmapped`) defaults to 1 instead: under `vmap` the
    wrapper's `lax.switch` runs every branch, so resetting the few alone would add to the whole batch's reset
    rather than replace it.
    """
    if config.env.reset_fraction:
        return config.env.reset_fraction
    if members_vmapped(population.size(config), config.members_in_parallel):
        return 1.0
    return env_registry.reset_fraction(config.env.name)


def steps_per_update(config: ConfigDict) -> int:
    """Environment steps in one update, over every device: `num_envs x unroll_length` (per member of a population);
    1 for a run that trains from a dataset, whose steps are gradient steps (`podracer.offline.offline_settings`)."""
    return 1 if offline_settings.from_dataset(config) else config.unroll_length * config.num_envs


def num_updates(config: ConfigDict) -> int:
    """The whole updates that cover `total_steps` (`podracer.run.budget`)."""
    return budget.whole_updates(config.total_steps, steps_per_update(config))


def rounding_note(config: ConfigDict) -> str | None:
    """The line a run prints when `total_steps` is not a whole number of updates; None when it is."""
    update = f"{config.num_envs} environments x {config.unroll_length} steps"
    return budget.rounding_note(config.total_steps, steps_per_update(config), update)


def updates_per_dispatch(config: ConfigDict) -> int:
    """K, the updates in one dispatch: `config.updates_per_dispatch`, or with 0 enough for about `log_records` records.

    Never more than the run has, so a short run compiles no longer program than it needs.
    """
    updates = num_updates(config)
    wanted = config.updates_per_dispatch or budget.updates_between_records(updates, config.log_records)
    return min(wanted, updates)


def shorter_dispatch(updates_per_dispatch: int, seconds: float, max_seconds: float) -> int:
    """The updates per dispatch to use after one of `updates_per_dispatch` took `seconds`.

    Unchanged while within `max_seconds`; otherwise the largest divisor that
    fits (so dispatches still end on the same update counts), at least 1. The
    compiled program takes the number of updates as an argument, so a shorter
    dispatch needs no recompilation.
    """
    if seconds <= max_seconds:
        return updates_per_dispatch
    fitting = max(1, int(updates_per_dispatch * max_seconds / seconds))
    return max(k for k in range(1, fitting + 1) if updates_per_dispatch % k == 0)
