"""How XLA:CPU is set up for a run: its thread pools and how many devices it shows, set once per process before
JAX creates its CPU client.

Threads. XLA:CPU splits a kernel that looks big enough over a pool with one
thread per core. The kernels of small agents are not big enough: in CleanRL's
CartPole PPO a minibatch step is about a hundred kernels of a few microseconds
each (a 128x64 by 64x64 product, a tanh over 8,192 numbers), and handing half
of each to another core costs more than it saves. On the 2-core CI machine one
thread runs that workload about a third faster than two. How a kernel is split
also changes float rounding, so a fixed thread count makes CPU results the
same on machines with different numbers of cores. `config.cpu_threads` sets the
size of the pools (PJRT reads the `PJRT_NPROC` environment variable when it
creates the CPU client); 0 keeps XLA's default, one thread per core, which
suits convolutional networks and Sebulba's actor and learner devices sharing
one CPU.

Devices. The other way to use several cores is Anakin's own: split the CPU
into `config.cpu_devices` devices and replicate the program over them, each
device running its own copy on its own thread, with the gradients averaged.
Where one thread cannot keep a core busy with big kernels, this can: on the
2-core CI machine Catch trains about 1.5x as fast on two devices of 256
environments as on one device of 256 (`configs/anakin_catch.py`), and CleanRL's
CartPole PPO at 2,048 environments 1.7x. So Anakin's default, 0, is one device
per core the process may run on, as many as the run's batch divides into
(`cpu_device_count`): a run uses the machine without a setting, and says how
many devices it took in its first line. A run is deterministic for a given
device count, not across counts. XLA:CPU's devices only exist on the CPU: on a
machine with an accelerator, JAX's default devices are the accelerator's and
the setting changes nothing.

Both take effect only in a process that has not used JAX yet, as under
`podracer train`; too late, they warn and change nothing. The user's own
setting always wins: `PJRT_NPROC` for threads, `JAX_NUM_CPU_DEVICES` or
`--xla_force_host_platform_device_count` in `XLA_FLAGS` for devices.

Random numbers. JAX lowers its threefry hash on CPU as a loop of 5 rounds
(smaller programs than the unrolled hash it emits elsewhere), and XLA:CPU runs
each pass of that loop as a dozen kernels of a few numbers each. An Anakin
rollout hashes several times a step (every environment's key split,
epsilon-greedy's coin and action, the resets), so those loops add up:
`unroll_threefry` gives the CPU the unrolled hash, the same numbers bit for
bit. PQN on MinAtar Breakout (one thread, 128 environments x 32 steps) then
takes 4% less CPU an update. Compiles move by about a second either way:
faster for Catch and DQN, slower for SAC.
"""

import dataclasses
import os
import warnings
from collections.abc import Mapping

import jax
from jax._src import xla_bridge
from jax._src.random import threefry2x32
from jax.interpreters import mlir
from ml_collections import ConfigDict

THREADS_ENV = "PJRT_NPROC"
DEVICES_ENV = "JAX_NUM_CPU_DEVICES"
DEVICES_FLAG = "--xla_force_host_platform_device_count"


def with_forced_devices(xla_flags: str, devices: int) -> str:
    """`xla_flags` with `devices` forced CPU devices in place of any count they set (0: none), the other flags kept.

    One count, not a second appended (XLA would read the last): JAX keys its
    persistent compilation cache by the flags' text, so a child given the same
    count as its parent reuses the programs the parent compiled.
    """
    kept = [flag for flag in xla_flags.split() if not flag.startswith(f"{DEVICES_FLAG}=")]
    return " ".join([*kept, f"{DEVICES_FLAG}={devices}"] if devices else kept)


def child_environment(
    base: Mapping[str, str] | None = None, *, threads: int | None = None, devices: int | None = None
) -> dict[str, str]:
    """`base` (this process's environment by default) for a child process whose XLA:CPU has `threads` threads and
    `devices` devices: the one place a child's XLA:CPU setting is made, for the pods, the comparison scripts and the
    tests' programs.

    `threads`: 0 leaves PJRT its default, one per core (`PJRT_NPROC` removed); None keeps `base`'s setting.
    `devices`: forced in place of any count `base` sets (`with_forced_devices`); 0 removes every count, so that
    the child's config decides (`cpu_devices`); None keeps `base`'s.
    """
    env = dict(os.environ if base is None else base)
    if threads is not None:
        env.pop(THREADS_ENV, None)
        env.update({THREADS_ENV: str(threads)} if threads else {})
    if devices is not None:
        env.pop(DEVICES_ENV, None)
        env["XLA_FLAGS"] = with_forced_devices(env.get("XLA_FLAGS", ""), devices)
    return env


def set_cpu_threads(threads: int) -> None:
    """Sizes XLA:CPU's thread pools to `threads` (0: one per core) if JAX has not started yet."""
    if threads == 0 or THREADS_ENV in os.environ or _too_late("cpu_threads", threads, f"{THREADS_ENV}={threads}"):
        return
    os.environ[THREADS_ENV] = str(threads)


def cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or `taskset` may narrow)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclasses.dataclass(frozen=True)
class Shares:
    """What a run splits evenly over its devices (Anakin's environments, meta-training's members per family), and
    the least of each that a device should hold for a count made from the cores (`cpu_device_count`)."""

    counts: tuple[int, ...] = ()
    smallest: int = 1


def cpu_device_count(config: ConfigDict, shares: Shares, available_cores: int) -> int:
    """The XLA:CPU devices a run of `config` splits the CPU into: `config.cpu_devices`, or with 0 one per core.

    With 0, the count is the largest, at most `available_cores`, that every
    count in `shares` divides into with at least `shares.smallest` per
    device, or 1; `num_devices`, when set, instead, since the run replicates
    over no more; and 1 in a job of several processes, which may share one
    machine (`scripts.launch_local`).
    """
    if config.cpu_devices:
        return config.cpu_devices
    if config.get("num_devices"):
        return config.num_devices
    if config.replicas > 1:
        return 1
    return max(
        devices
        for devices in range(1, available_cores + 1)
        if devices == 1 or all(n % devices == 0 and n // devices >= shares.smallest for n in shares.counts)
    )


def set_cpu_devices(devices: int) -> None:
    """Splits the CPU into `devices` XLA devices (1: JAX's default of one) if JAX has not started yet."""
    if devices == 1 or users_device_count() or _too_late("cpu_devices", devices, f"{DEVICES_ENV}={devices}"):
        return
    jax.config.update("jax_num_cpu_devices", devices)


def users_device_count() -> str | None:
    """The setting of this process's environment that fixes XLA:CPU's device count, which wins over the config's."""
    if DEVICES_ENV in os.environ:
        return DEVICES_ENV
    return "XLA_FLAGS" if DEVICES_FLAG in os.environ.get("XLA_FLAGS", "") else None


def device_count_origin(config: ConfigDict) -> str:
    """Where a run's XLA:CPU device count came from, for the line a run starts with."""
    if setting := users_device_count():
        return f"as {setting} sets"
    if config.cpu_devices:
        return f"cpu_devices={config.cpu_devices}"
    return f"cpu_devices=0: at most one per core of this machine's {cores()}, --config.cpu_devices=N for N"


def unroll_threefry() -> None:
    """Lowers threefry unrolled on CPU, as JAX does on other platforms, for every program compiled from now on."""
    mlir.register_lowering(threefry2x32.threefry2x32_p, threefry2x32._threefry2x32_lowering_rule, platform="cpu")


def _too_late(field: str, value: int, environment: str) -> bool:
    """Whether JAX has already started in this process, in which case `config.<field>` cannot apply: warns so."""
    if not xla_bridge.backends_are_initialized():
        return False
    warnings.warn(
        f"config.{field}={value} has no effect: JAX was already running in this process "
        f"(set {environment} before starting Python instead)",
        stacklevel=3,
    )
    return True
