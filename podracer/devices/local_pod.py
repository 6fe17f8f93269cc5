"""A pod on one machine: N local processes, each with M forced CPU devices, run as one JAX job.

Every process runs the same command. They find each other through a loopback
coordinator (`PODRACER_COORDINATOR_ADDRESS`, see `podracer.devices.distributed`) and
use gloo for CPU collectives, so a multi-host path can be exercised, and
measured, without a cluster. Each line a process prints is relayed with its
index in front. If any process fails, the others are stopped and the pod's
status is that process's. `python -m scripts.launch_local` is the command
line over this module; `podracer bench` measures Sebulba's replicas with it.
"""

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TextIO

from podracer.devices.distributed import COORDINATOR_ENV, PROCESS_ID_ENV
from podracer.devices.xla_cpu import child_environment

GRACE_SECONDS = 20  # How long a stopped process may take to exit after SIGTERM before it is killed.
POLL_SECONDS = 0.2


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def forced_cpu_env(devices: int, base: Mapping[str, str] | None = None) -> dict:
    """`base` (this process's environment by default) for a child that sees `devices` forced CPU devices.

    Any `XLA_FLAGS` already set are kept, with this count in place of theirs (`xla_cpu.child_environment`).
    """
    return {**child_environment(base, devices=devices), "JAX_PLATFORMS": "cpu", "PYTHONUNBUFFERED": "1"}


def process_env(index: int, devices_per_process: int, address: str) -> dict:
    """The environment of local process `index`: its forced CPU devices and how to reach the coordinator."""
    return {**forced_cpu_env(devices_per_process), COORDINATOR_ENV: address, PROCESS_ID_ENV: str(index)}


def start(
    index: int, command: Sequence[str], env: Mapping[str, str], output: TextIO
) -> tuple[subprocess.Popen, threading.Thread]:
    """Starts process `index` of the pod running `command`, and the thread relaying its output lines to `output`."""
    process = subprocess.Popen(
        list(command), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    relaying = threading.Thread(target=relay, args=(index, process, output), daemon=True)
    relaying.start()
    return process, relaying


def relay(index: int, process: subprocess.Popen, output: TextIO) -> None:
    """Copies the lines `process` prints to `output`, each prefixed with `[index] `, until it closes its output."""
    for line in process.stdout:
        output.write(f"[{index}] {line}")
        output.flush()


def stop(processes: Sequence[subprocess.Popen]) -> None:
    """Sends SIGTERM to every process still running, then kills those not gone within `GRACE_SECONDS`."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run(
    command: Sequence[str],
    processes: int,
    devices_per_process: int,
    output: TextIO = sys.stdout,
    env: Mapping[str, str] | None = None,
) -> int:
    """Runs `command` in a pod of `processes` local processes and waits for all of them; returns the pod's status.

    The status is 0 when every process exits 0; otherwise the status of the
    first that failed (128 + N for one killed by signal N), after stopping the
    others; 130 when interrupted (Ctrl-C), after stopping them all. `env` adds
    environment variables to every process's.
    """
    address = f"127.0.0.1:{free_port()}"
    envs = [{**process_env(i, devices_per_process, address), **(env or {})} for i in range(processes)]
    started = [start(i, command, envs[i], output) for i in range(processes)]
    pod = [process for process, _ in started]
    try:
        status = _wait(pod)
    except KeyboardInterrupt:
        stop(pod)
        status = 130
    for _, relaying in started:  # Every line printed is relayed before the pod's status is known.
        relaying.join(GRACE_SECONDS)
    return status


def _wait(pod: Sequence[subprocess.Popen]) -> int:
    while True:
        codes = [process.poll() for process in pod]
        failed = [(index, code) for index, code in enumerate(codes) if code not in (None, 0)]
        if failed:
            index, code = failed[0]
            print(f"local pod: process {index} exited with status {code}; stopping the others", file=sys.stderr)
            stop(pod)
            return code if code > 0 else 128 - code
        if all(code == 0 for code in codes):
            return 0
        time.sleep(POLL_SECONDS)
