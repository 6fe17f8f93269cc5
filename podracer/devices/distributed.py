"""JAX's multi-controller runtime: one process per host, all of them one job.

A run spans `config.replicas` processes. With one, nothing is initialised.
With more, every process calls `jax.distributed.initialize` before JAX touches
a device, and afterwards `jax.devices()` lists the devices of every process:

- With `PODRACER_COORDINATOR_ADDRESS` (and `PODRACER_PROCESS_ID`) in the
  environment, as `python -m scripts.launch_local` sets them for a pod of
  local processes (or a GPU cluster's launcher would), the coordinator is
  explicit and CPU collectives go through gloo.
- Without it, JAX detects the cluster itself: Cloud TPU VMs (every worker of a
  slice), SLURM and other environments it knows.

A process that dies stops sending heartbeats; the others then fail within the
heartbeat timeout (20 s, or `PODRACER_HEARTBEAT_TIMEOUT_SECONDS`) instead of
waiting forever in a collective.
"""

import os

import jax
from ml_collections import ConfigDict

from podracer.config.errors import ConfigError
from podracer.devices.xla_cpu import Shares, cores, cpu_device_count, set_cpu_devices, set_cpu_threads, unroll_threefry

COORDINATOR_ENV = "PODRACER_COORDINATOR_ADDRESS"
PROCESS_ID_ENV = "PODRACER_PROCESS_ID"
HEARTBEAT_TIMEOUT_ENV = "PODRACER_HEARTBEAT_TIMEOUT_SECONDS"
HEARTBEAT_TIMEOUT_SECONDS = 20
INITIALIZATION_TIMEOUT_SECONDS = 120


def start(config: ConfigDict, shares: Shares) -> None:
    """What a process sets up before JAX touches a device: XLA:CPU's threads, devices and random-number hash, then
    the job of `config.replicas`.

    `shares`: what the run splits evenly over its devices, which bounds how
    many XLA:CPU devices `config.cpu_devices=0` makes (`xla_cpu.cpu_device_count`).
    Raises `ConfigError` when the job does not have `config.replicas` processes.
    """
    set_cpu_threads(config.cpu_threads)
    set_cpu_devices(cpu_device_count(config, shares, cores()))
    unroll_threefry()
    initialize(config.replicas)
    if jax.process_count() != config.replicas:
        raise ConfigError(
            "replicas",
            f"{config.replicas} processes expected but this job has {jax.process_count()}",
            "start one process per replica (python -m scripts.launch_local, scripts/launch_tpu.sh) or set "
            f"--config.replicas={jax.process_count()}",
        )


def initialize(replicas: int) -> None:
    """Joins the job of `replicas` processes (idempotent; nothing to do for one process)."""
    if replicas == 1 or jax.distributed.is_initialized():
        return
    coordinator = os.environ.get(COORDINATOR_ENV)
    heartbeat_timeout = int(os.environ.get(HEARTBEAT_TIMEOUT_ENV, HEARTBEAT_TIMEOUT_SECONDS))
    if coordinator:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            coordinator_address=coordinator,
            num_processes=replicas,
            process_id=int(os.environ[PROCESS_ID_ENV]),
            initialization_timeout=INITIALIZATION_TIMEOUT_SECONDS,
            heartbeat_timeout_seconds=heartbeat_timeout,
        )
    else:
        try:
            jax.distributed.initialize(
                initialization_timeout=INITIALIZATION_TIMEOUT_SECONDS,
                heartbeat_timeout_seconds=heartbeat_timeout,
            )
        except (ValueError, RuntimeError) as error:  # No cluster JAX knows about, or JAX already started alone.
            raise ConfigError(
                "replicas",
                f"{replicas} processes requested, but this is not a Cloud TPU slice or a cluster JAX detects ({error})",
                f"set {COORDINATOR_ENV} and {PROCESS_ID_ENV} in every process, use "
                "python -m scripts.launch_local on one machine, or leave --config.replicas=1",
            ) from None


def is_chief() -> bool:
    """Whether this process writes logs and shows progress: process 0 of the job."""
    return jax.process_index() == 0
