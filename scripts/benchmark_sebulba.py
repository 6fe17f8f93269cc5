"""Sebulba throughput: pipeline efficiency against envpool alone, and Atari frames per second.

- `pipeline`: Sebulba frames/s on Pong with a small network (a 64-unit MLP on
  the pixels, so inference and learning cost little) divided by envpool's own
  throughput stepping the same environments (2 threads x 32 Pong
  environments, random actions, no learning). The ratio says how much of the
  environments' speed the actor / learner pipeline keeps.
- `pong_resnet`: IMPALA with the ResNet torso (channels 16-32-32, unroll 20,
  2 actor threads x 32 environments), one actor and one learner device.
- `halfcheetah`: `configs/sebulba_halfcheetah_ppo.py` (continuous PPO, 2
  actor threads x 8 MuJoCo environments, 10 epochs x 32 minibatches per
  update) against envpool stepping the same 2 x 8 HalfCheetah-v4 environments
  with random actions.

Frames count Atari frames (agent steps x frame skip 4). Sebulba figures are
steady state: the log windows after the first `--warmup` updates. On a CPU-only
machine the script splits the CPU into two XLA devices (one actor, one learner).
Usage:

    python scripts/benchmark_sebulba.py                  # both rows
    python scripts/benchmark_sebulba.py --only pipeline
"""

import argparse
import os
import sys
import threading
import time

if "--xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"

import jax  # noqa: E402 -- after XLA_FLAGS.
import numpy as np  # noqa: E402

from podracer.config import load  # noqa: E402

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs")
THREADS, ENVS_PER_THREAD = 2, 32


def pong_config(torso: str, updates: int, warmup: int):
    overrides = {
        "actor_threads_per_device": THREADS,
        "envs_per_thread": ENVS_PER_THREAD,
        "log_every_updates": 1,
        "network.torso": torso,
    }
    if torso == "mlp":
        overrides["network.hidden_sizes"] = (64,)
    config = load(os.path.join(CONFIGS, "sebulba_pong_impala.py"), overrides)
    config.total_steps = (warmup + updates) * THREADS * ENVS_PER_THREAD * config.unroll_length
    return config


def halfcheetah_config(updates: int, warmup: int):
    config = load(os.path.join(CONFIGS, "sebulba_halfcheetah_ppo.py"), {"log_every_updates": 1})
    steps_per_update = config.actor_threads_per_device * config.envs_per_thread * config.unroll_length
    config.total_steps = (warmup + updates) * steps_per_update
    return config


def sebulba_frames_per_second(config, warmup: int) -> tuple[float, dict]:
    import podracer

    history = podracer.train(config).history
    steady = history[warmup:]
    frames = sum(r["frames_per_second"] * r["seconds"] for r in steady)
    shares = {k: np.mean([r[k] for r in steady]) for k in ("actor_env_share", "actor_inference_share", "learner_share")}
    return frames / sum(r["seconds"] for r in steady), shares


def envpool_frames_per_second(name: str, steps: int, threads: int = THREADS, envs_per_thread: int = ENVS_PER_THREAD):
    """envpool alone: `threads` Python threads each stepping their own pool with random actions."""
    from podracer.envs import make_envpool_env

    envs = [make_envpool_env(name, envs_per_thread, seed=i * envs_per_thread) for i in range(threads)]

    def run(env, seed):
        rng = np.random.default_rng(seed)
        spec = env.action_spec()
        env.reset()
        for _ in range(steps):
            if hasattr(spec, "num_values"):
                env.step(rng.integers(0, spec.num_values, env.num_envs))
            else:
                env.step(rng.uniform(spec.minimum, spec.maximum, (env.num_envs, *spec.shape)).astype(spec.dtype))

    for env in envs:  # Warm-up.
        env.reset()
    workers = [threading.Thread(target=run, args=(env, i)) for i, env in enumerate(envs)]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - start
    frames = threads * envs_per_thread * steps * envs[0].frames_per_step
    for env in envs:
        env.close()
    return frames / seconds


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["pipeline", "pong_resnet", "halfcheetah"], action="append")
    parser.add_argument("--updates", type=int, default=8, help="steady-state updates measured per Sebulba row")
    parser.add_argument("--warmup", type=int, default=2, help="updates skipped (compilation, first transfers)")
    args = parser.parse_args(argv)
    rows = args.only or ["pipeline", "pong_resnet", "halfcheetah"]
    devices = jax.devices()
    print(
        f"backend={jax.default_backend()} devices={len(devices)} ({devices[0].device_kind}), cpu cores={os.cpu_count()}"
    )
    if "pipeline" in rows:
        config = pong_config("mlp", args.updates, args.warmup)
        raw = envpool_frames_per_second(config.env.name, steps=config.unroll_length * args.updates)
        report("envpool alone (random actions)", "frames/s", raw)
        report("sebulba, MLP(64) on pixels", "frames/s", *sebulba_frames_per_second(config, args.warmup), raw=raw)
    if "pong_resnet" in rows:
        config = pong_config("impala_resnet", args.updates, args.warmup)
        report("sebulba, IMPALA ResNet 16-32-32", "frames/s", *sebulba_frames_per_second(config, args.warmup))
    if "halfcheetah" in rows:
        config = halfcheetah_config(args.updates, args.warmup)
        threads, envs = config.actor_threads_per_device, config.envs_per_thread
        raw = envpool_frames_per_second(config.env.name, config.unroll_length * args.updates, threads, envs)
        report(f"envpool alone, HalfCheetah-v4 {threads}x{envs}", "steps/s", raw)
        report("sebulba, PPO on HalfCheetah-v4", "steps/s", *sebulba_frames_per_second(config, args.warmup), raw=raw)


def report(label: str, unit: str, rate: float, shares: dict | None = None, raw: float | None = None) -> None:
    """One row: the rate, the pipeline efficiency against envpool's `raw` rate, and the time shares."""
    efficiency = f"pipeline efficiency {rate / raw:.2f}   " if raw else ""
    shares = " ".join(f"{k}={v:.2f}" for k, v in (shares or {}).items())
    print(f"{label:<38} {rate:>10,.0f} {unit}   {efficiency}{shares}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
