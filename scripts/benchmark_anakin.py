"""Anakin training throughput: environment steps per second after compilation.

Runs each benchmark's config for its full length (no progress bar, no logs)
and reports the median steps/s over the dispatches after the first, so
compilation and warm-up are excluded. Usage:

    python scripts/benchmark_anakin.py                       # the standard table
    python scripts/benchmark_anakin.py --only cartpole_ppo   # one row
"""

import argparse
import os
import runpy
import statistics
import sys

import jax

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs")

# name: (config file, overrides)
BENCHMARKS = {
    "catch_actor_critic": ("anakin_catch.py", {}),
    "cartpole_ppo": ("anakin_cartpole_ppo.py", {}),  # CleanRL's workload: 4 envs x 128 steps, 5e5 steps.
    "cartpole_ppo_256_envs": ("anakin_cartpole_ppo.py", {"num_envs": 256, "total_steps": 256 * 128 * 4 * 20, "updates_per_dispatch": 4}),
    "cartpole_ppo_2048_envs": ("anakin_cartpole_ppo.py", {"num_envs": 2048, "total_steps": 2048 * 128 * 10, "updates_per_dispatch": 1}),
}


def load_config(filename: str, overrides: dict):
    config = runpy.run_path(os.path.join(CONFIGS, filename))["get_config"]()
    for field, value in overrides.items():
        config[field] = value
    return config


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=sorted(BENCHMARKS), action="append", help="run only these benchmarks")
    args = parser.parse_args(argv)
    from podracer.anakin import train
    from podracer.cpu_threads import set_cpu_threads

    configs = {name: load_config(*BENCHMARKS[name]) for name in args.only or BENCHMARKS}
    set_cpu_threads(next(iter(configs.values())).cpu_threads)  # Every Anakin config uses the same number.
    print(f"backend={jax.default_backend()} devices={jax.device_count()} ({jax.devices()[0].device_kind}), "
          f"XLA:CPU threads={os.environ.get('PJRT_NPROC', 'one per core')}")
    print(f"{'benchmark':<26} {'envs':>6} {'steps':>10} {'compile s':>10} {'steps/s':>12} {'final return':>13}")
    for name, config in configs.items():
        _, history = train(config, show_progress=False)
        steady = [record["steps_per_second"] for record in history[1:]] or [history[0]["steps_per_second"]]
        print(
            f"{name:<26} {config.num_envs:>6} {history[-1]['step']:>10,} {history[0]['compile_seconds']:>10.1f} "
            f"{statistics.median(steady):>12,.0f} {history[-1]['mean_episode_return']:>13.3f}",
            flush=True,
        )


if __name__ == "__main__":
    sys.exit(main())
