"""What the non-finite check (`config.check_finite`, podracer.run.finite) costs Anakin, measured side by side.

Compiles each benchmark's dispatch twice, with and without the check, and
times them interleaved on one chain of training state (A, B, A, B, ...), so
both see the same machine load; reports the median of each and the overhead.
Catch's update is the smallest of the built-in workloads, so it bounds the
relative cost from above. Usage:

    python -m scripts.benchmark_finite_check [--repeats 30]
"""

import argparse
import os
import statistics
import sys
import time

import jax
import numpy as np

from podracer import agents, envs
from podracer import load_config as load
from podracer.anakin import anakin_settings
from podracer.anakin.program import make_dispatch, make_init
from podracer.devices.device_split import anakin_devices
from podracer.devices.topology import device_mesh
from podracer.devices.xla_cpu import set_cpu_threads

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs")
BENCHMARKS = {"catch_actor_critic": "anakin_catch.py", "cartpole_ppo": "anakin_cartpole_ppo.py"}


def measure(filename: str, repeats: int) -> tuple[float, float]:
    """Median seconds per dispatch (with the check, without it), interleaved."""
    config = load(os.path.join(CONFIGS, filename))
    env = envs.wrap_for_training(envs.make(config.env.name))
    agent = agents.make(config, num_updates=10**6)
    mesh = device_mesh(anakin_devices(config))
    key = jax.random.key(0)
    init = make_init(env, lambda _: agent, config.num_envs, mesh, key, {})
    state = init(key, {})
    updates = np.int32(anakin_settings.updates_per_dispatch(config))
    programs = [
        make_dispatch(env, lambda _: agent, config.unroll_length, int(updates), mesh, check_finite=check)
        .lower(init.eval_shape(key, {}), {}, updates)
        .compile()
        for check in (True, False)
    ]
    seconds: list[list[float]] = [[], []]
    for repeat in range(repeats + 2):  # The first two rounds warm up.
        for index, program in enumerate(programs):
            start = time.perf_counter()
            state, outputs = program(state, {}, updates)
            jax.block_until_ready(outputs)
            if repeat >= 2:
                seconds[index].append(time.perf_counter() - start)
    return statistics.median(seconds[0]), statistics.median(seconds[1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=30, help="timed dispatches of each program")
    args = parser.parse_args(argv)
    set_cpu_threads(1)  # As the Anakin configs set it; before JAX starts its CPU client.
    print(f"{'benchmark':<20} {'with check ms':>14} {'without ms':>11} {'overhead':>9}")
    for name, filename in BENCHMARKS.items():
        checked, unchecked = measure(filename, args.repeats)
        print(
            f"{name:<20} {checked * 1e3:>14.2f} {unchecked * 1e3:>11.2f} {checked / unchecked - 1:>+9.1%}", flush=True
        )
    print(f"backend={jax.default_backend()} ({jax.devices()[0].device_kind}), devices={jax.device_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
