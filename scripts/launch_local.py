"""A pod on one machine: N local processes, each with M forced CPU devices, as one JAX job.

Every process runs the same `podracer train ...` command with
`--config.replicas=N`; they find each other through a loopback coordinator
(`PODRACER_COORDINATOR_ADDRESS`, see `podracer/distributed.py`) and use gloo
for CPU collectives. Output lines are prefixed with the process index. If any
process fails, the others are stopped and the launcher exits with its status.
Usage:

    python scripts/launch_local.py --processes 2 --devices-per-process 2 -- \\
        --config configs/anakin_catch.py --workdir runs/local_pod
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

GRACE_SECONDS = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_env(index: int, devices_per_process: int, address: str) -> dict:
    """The environment of local process `index`: its forced CPU devices and how to reach the coordinator."""
    return dict(
        os.environ,
        XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices_per_process}",
        JAX_PLATFORMS="cpu",
        PODRACER_COORDINATOR_ADDRESS=address,
        PODRACER_PROCESS_ID=str(index),
        PYTHONUNBUFFERED="1",
    )


def start(index: int, args: argparse.Namespace, address: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "podracer.cli", "train", *args.train_args, f"--config.replicas={args.processes}"]
    process = subprocess.Popen(
        command,
        env=process_env(index, args.devices_per_process, address),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    threading.Thread(target=relay, args=(index, process), daemon=True).start()
    return process


def relay(index: int, process: subprocess.Popen) -> None:
    for line in process.stdout:
        sys.stdout.write(f"[{index}] {line}")
        sys.stdout.flush()


def stop(processes: list[subprocess.Popen]) -> None:
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, required=True, help="processes (replicas) in the job")
    parser.add_argument("--devices-per-process", type=int, default=1, help="forced CPU devices in each process")
    parser.add_argument("train_args", nargs=argparse.REMAINDER, help="arguments of `podracer train`, after --")
    args = parser.parse_args(argv)
    if args.train_args[:1] == ["--"]:
        args.train_args = args.train_args[1:]
    if args.processes < 1 or args.devices_per_process < 1:
        parser.error("--processes and --devices-per-process must be at least 1")
    if not args.train_args:
        parser.error("give the `podracer train` arguments after --, e.g. -- --config configs/anakin_catch.py")

    address = f"127.0.0.1:{free_port()}"
    processes = [start(index, args, address) for index in range(args.processes)]
    try:
        while True:
            codes = [process.poll() for process in processes]
            failed = [(index, code) for index, code in enumerate(codes) if code not in (None, 0)]
            if failed:
                index, code = failed[0]
                print(f"launch_local: process {index} exited with status {code}; stopping the others", file=sys.stderr)
                stop(processes)
                return code if code > 0 else 128 - code
            if all(code == 0 for code in codes):
                return 0
            time.sleep(0.2)
    except KeyboardInterrupt:
        stop(processes)
        return 130


if __name__ == "__main__":
    sys.exit(main())
