"""Anakin training throughput: environment steps per second after compilation.

Runs each benchmark's config for its full length (no progress bar, no logs)
and reports the median steps/s over the dispatches after the first, so
compilation and warm-up are excluded. Each row runs in a fresh process, so its
config's `cpu_threads` applies (XLA:CPU sizes its thread pool once per process):
one thread for the small batches, one per core from 256 environments up, where
the kernels are big enough to split. Usage:

    python scripts/benchmark_anakin.py                       # the standard table
    python scripts/benchmark_anakin.py --only cartpole_ppo   # one row
"""

import argparse
import os
import statistics
import subprocess
import sys

import jax

from podracer.config import load

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs")

# name: (config file, overrides)
BENCHMARKS = {
    "catch_actor_critic": ("anakin_catch.py", {}),
    "cartpole_ppo": ("anakin_cartpole_ppo.py", {}),  # CleanRL's workload: 4 envs x 128 steps, 5e5 steps.
    "cartpole_ppo_256_envs": (
        "anakin_cartpole_ppo.py",
        {"num_envs": 256, "total_steps": 256 * 128 * 4 * 20, "updates_per_dispatch": 4, "cpu_threads": 0},
    ),
    "cartpole_ppo_2048_envs": (
        "anakin_cartpole_ppo.py",
        {"num_envs": 2048, "total_steps": 2048 * 128 * 10, "updates_per_dispatch": 1, "cpu_threads": 0},
    ),
    # The environment suites (extras): gymnax's MinAtar Breakout and Pendulum, Brax's inverted_pendulum.
    "minatar_breakout_ppo": ("anakin_minatar_breakout_ppo.py", {"total_steps": 64 * 128 * 61 * 3}),
    "pendulum_ppo": ("anakin_pendulum_ppo.py", {}),
    "brax_inverted_pendulum_ppo": ("anakin_brax_ppo.py", {"total_steps": 128 * 32 * 49 * 3}),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=sorted(BENCHMARKS), action="append", help="run only these benchmarks")
    parser.add_argument("--row", choices=sorted(BENCHMARKS), help=argparse.SUPPRESS)  # One row, in this process.
    args = parser.parse_args(argv)
    if args.row:
        return run_row(args.row)
    print(
        f"{'benchmark':<26} {'envs':>6} {'threads':>8} {'steps':>10} {'compile s':>10} {'steps/s':>12} {'final return':>13}"
    )
    for name in args.only or BENCHMARKS:
        subprocess.run([sys.executable, os.path.abspath(__file__), "--row", name], check=True)
    print(
        f"backend={jax.default_backend()} devices={jax.device_count()} ({jax.devices()[0].device_kind}); "
        "threads: XLA:CPU thread pool size, config.cpu_threads (all: one per core)"
    )
    return 0


def run_row(name: str) -> int:
    import podracer

    filename, overrides = BENCHMARKS[name]
    config = load(os.path.join(CONFIGS, filename), overrides)
    history = podracer.train(config).history  # Applies config.cpu_threads before JAX starts.
    steady = [record["steps_per_second"] for record in history[1:]] or [history[0]["steps_per_second"]]
    print(
        f"{name:<26} {config.num_envs:>6} {os.environ.get('PJRT_NPROC', 'all'):>8} {history[-1]['step']:>10,} "
        f"{history[0]['compile_seconds']:>10.1f} {statistics.median(steady):>12,.0f} "
        f"{history[-1]['mean_episode_return']:>13.3f}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
