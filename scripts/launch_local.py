"""A pod on one machine: N local processes, each with M forced CPU devices, as one JAX job.

Every process runs the same `podracer train ...` command with
`--config.replicas=N`; they find each other through a loopback coordinator
(`PODRACER_COORDINATOR_ADDRESS`, see `podracer/devices/distributed.py`) and use gloo
for CPU collectives. Output lines are prefixed with the process index. If any
process fails, the others are stopped and the launcher exits with its status.
The pod itself is `podracer.devices.local_pod`; this is its command line. Usage:

    python -m scripts.launch_local --processes 2 --devices-per-process 2 -- \\
        --config configs/anakin_catch.py --workdir runs/local_pod
"""

import argparse
import sys

from podracer.devices import local_pod


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
    command = [sys.executable, "-m", "podracer.cli", "train", *args.train_args, f"--config.replicas={args.processes}"]
    return local_pod.run(command, args.processes, args.devices_per_process)


if __name__ == "__main__":
    sys.exit(main())
