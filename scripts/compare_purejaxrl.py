"""Side-by-side throughput against PureJaxRL's single-file PPO on CleanRL's CartPole workload.

PureJaxRL (github.com/luchris429/purejaxrl) is not a dependency of podracer:
point `--purejaxrl` at a checkout, in an environment with its requirements
(gymnax, distrax, brax). Its `purejaxrl/ppo.py` trains the whole run in one
compiled program; podracer runs `configs/anakin_cartpole_ppo.py`, the same
workload (4 envs x 128 steps, 4 epochs x 4 minibatches, 5e5 steps).

Both are compiled first, then full runs alternate in this one process, so the
two see the same machine load; on a shared VM only such paired figures mean
anything. Compilation is left out of both. Usage:

    python scripts/compare_purejaxrl.py --purejaxrl ~/purejaxrl [--pairs 6]

Both run with XLA:CPU's thread pool sized by `--cpu-threads` (default: the
podracer config's `cpu_threads`); start the script with `PJRT_NPROC` unset and
`--cpu-threads 0` to time both with XLA's default of one thread per core.
"""

import argparse
import os
import statistics
import sys
import time

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "anakin_cartpole_ppo.py")

# PureJaxRL's CartPole settings (its ppo.py `__main__`), which are CleanRL's.
PUREJAXRL_CONFIG = {
    "LR": 2.5e-4,
    "NUM_ENVS": 4,
    "NUM_STEPS": 128,
    "TOTAL_TIMESTEPS": 5e5,
    "UPDATE_EPOCHS": 4,
    "NUM_MINIBATCHES": 4,
    "GAMMA": 0.99,
    "GAE_LAMBDA": 0.95,
    "CLIP_EPS": 0.2,
    "ENT_COEF": 0.01,
    "VF_COEF": 0.5,
    "MAX_GRAD_NORM": 0.5,
    "ACTIVATION": "tanh",
    "ENV_NAME": "CartPole-v1",
    "ANNEAL_LR": True,
    "DEBUG": False,
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--purejaxrl", required=True, help="a PureJaxRL checkout (the folder holding purejaxrl/ppo.py)")
    parser.add_argument("--pairs", type=int, default=6, help="alternating runs of each")
    parser.add_argument("--cpu-threads", type=int, default=None, help="XLA:CPU threads for both (0: one per core)")
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.purejaxrl, "purejaxrl", "ppo.py")):
        parser.error(f"--purejaxrl: no purejaxrl/ppo.py under {args.purejaxrl}; pass the checkout's top folder")

    from podracer.config import load
    from podracer.cpu_threads import set_cpu_threads

    config = load(CONFIG)
    if args.cpu_threads is not None:
        config.cpu_threads = args.cpu_threads
    set_cpu_threads(config.cpu_threads)  # Before JAX starts, for both programs.
    import jax

    import podracer

    sys.path.insert(0, os.path.abspath(args.purejaxrl))
    from purejaxrl.ppo import make_train

    purejaxrl_run = jax.jit(make_train(dict(PUREJAXRL_CONFIG))).lower(jax.random.PRNGKey(0)).compile()
    steps = int(PUREJAXRL_CONFIG["TOTAL_TIMESTEPS"]) // 512 * 512

    def time_purejaxrl(seed: int) -> float:
        start = time.perf_counter()
        jax.block_until_ready(purejaxrl_run(jax.random.PRNGKey(seed)))
        return steps / (time.perf_counter() - start)

    def time_podracer(seed: int) -> float:
        config.seed = seed
        history = podracer.train(config).history  # Each record's rate leaves compilation out.
        per_dispatch = history[0]["step"]
        return history[-1]["step"] / sum(per_dispatch / record["steps_per_second"] for record in history)

    print(f"XLA:CPU threads={os.environ.get('PJRT_NPROC', 'one per core')}, {steps:,} steps per run")
    time_purejaxrl(0)  # Warm-up.
    speed_ups = []
    for seed in range(args.pairs):
        theirs, ours = time_purejaxrl(seed), time_podracer(seed)
        speed_ups.append(ours / theirs)
        print(
            f"PureJaxRL {theirs:>9,.0f} steps/s   podracer {ours:>9,.0f} steps/s   speed-up {ours / theirs:.2f}",
            flush=True,
        )
    print(f"median speed-up over {args.pairs} pairs: {statistics.median(speed_ups):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
