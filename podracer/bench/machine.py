"""What machine a benchmark ran on: CPU, cores, accelerator, JAX version, podracer's commit and glibc's tunables.

Every row of bench.csv carries these, so figures from different machines or
commits are never mistaken for one another. The accelerators are asked of JAX
in a fresh process (`python -m podracer.bench.machine` prints them): the
benchmark's own process never starts JAX, so that each measuring process
chooses its devices and none finds an accelerator's memory already taken.
"""

import dataclasses
import json
import os
import platform
import subprocess
import sys
from importlib import metadata

from podracer.devices import host_memory

PROBE_TIMEOUT_SECONDS = 120
REPOSITORY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclasses.dataclass(frozen=True)
class Devices:
    """JAX's default devices: their platform (cpu, gpu, tpu), kind and number."""

    platform: str
    kind: str
    count: int


@dataclasses.dataclass(frozen=True)
class Machine:
    """The machine columns of bench.csv."""

    cpu_model: str
    cpu_cores: int
    accelerator: str  # "N x KIND" of JAX's default devices, or "none" where they are the CPU.
    jax_version: str
    podracer_commit: str  # Short hash, "-dirty" with uncommitted changes, "unknown" outside a git checkout.
    glibc_tunables: str  # GLIBC_TUNABLES as the measuring processes inherit it: huge pages or not.


MACHINE_COLUMNS = tuple(field.name for field in dataclasses.fields(Machine))


def describe(devices: Devices) -> Machine:
    """This machine, with `devices` (from `probe`) as its accelerators."""
    return Machine(
        cpu_model=cpu_model(),
        cpu_cores=os.cpu_count() or 1,
        accelerator="none" if devices.platform == "cpu" else f"{devices.count} x {devices.kind}",
        jax_version=metadata.version("jax"),
        podracer_commit=commit(REPOSITORY),
        glibc_tunables=os.environ.get(host_memory.TUNABLES_ENV, ""),
    )


def probe() -> Devices:
    """JAX's default devices, as a fresh process with this process's environment sees them.

    Raises `subprocess.CalledProcessError` if JAX cannot start (its error is printed above).
    """
    result = subprocess.run(
        [sys.executable, "-m", "podracer.bench.machine"],
        stdout=subprocess.PIPE,
        text=True,
        timeout=PROBE_TIMEOUT_SECONDS,
        check=True,
    )
    return Devices(**json.loads(result.stdout.strip().splitlines()[-1]))


def cpu_model(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU's model name: /proc/cpuinfo's first "model name", else `platform.processor()`, else "unknown"."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                name, _, value = line.partition(":")
                if name.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def commit(directory: str) -> str:
    """The short hash of the git checkout at `directory`, "-dirty" if tracked files changed; "unknown" if none."""
    try:
        head = _git(directory, "rev-parse", "--short", "HEAD")
        changed = _git(directory, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if changed else "")


def _git(directory: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", directory, *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()


if __name__ == "__main__":
    import jax

    device = jax.devices()[0]
    print(json.dumps({"platform": device.platform, "kind": device.device_kind, "count": jax.device_count()}))
