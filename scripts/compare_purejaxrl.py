"""Side-by-side throughput against PureJaxRL's single-file PPO, on CartPole or on MinAtar Breakout.

PureJaxRL (github.com/luchris429/purejaxrl) is not a dependency of podracer:
point `--purejaxrl` at a checkout, in an environment with its requirements
(gymnax, distrax). Its `purejaxrl/ppo.py` trains the whole run in one
compiled program. `--task cartpole` (the default) runs CleanRL's CartPole
workload in both (4 envs x 128 steps, 4 epochs x 4 minibatches, 5e5 steps;
podracer's `configs/anakin_cartpole_ppo.py`, its own pure-JAX CartPole).
`--task breakout` runs PureJaxRL's MinAtar settings on gymnax's
Breakout-MinAtar in both (64 envs x 128 steps, 4 epochs x 8 minibatches,
ReLU 64-64 actor and critic; podracer's `configs/anakin_minatar_breakout_ppo.py`
through its gymnax adapter), for 122 updates (1e6 steps) instead of 1e7 steps.

Both are compiled first, then full runs alternate in this one process, so the
two see the same machine load; on a shared VM only such paired figures mean
anything. Compilation is left out of both. Usage:

    python scripts/compare_purejaxrl.py --purejaxrl ~/purejaxrl [--task breakout] [--pairs 6]

`--num-envs N` and `--total-steps S` change the batch and the length of the
run on both sides alike (PureJaxRL's NUM_ENVS and TOTAL_TIMESTEPS, podracer's
num_envs and total_steps, in whole updates and whole dispatches of podracer's,
so that both make the same updates); every other hyperparameter stays the task's,
so minibatches grow with the batch (N x 128 / 4 transitions on CartPole).
Both run with XLA:CPU's thread pool sized by `--cpu-threads` (0: XLA's
default of one thread per core; start the script with `PJRT_NPROC` unset). By
default that is the podracer config's `cpu_threads` (one thread) below
`WIDE_BATCH` environments and one per core from there up: on the 2-core CI
machine a second thread makes PPO on CartPole 1.5x as fast on both sides at
256 and at 2,048 environments, while it slows CleanRL's 4 environments down.

    python scripts/compare_purejaxrl.py --purejaxrl ~/purejaxrl --num-envs 2048 --total-steps 1e7
"""

import argparse
import os
import statistics
import sys
import time
import types

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs")

# PureJaxRL's CartPole settings (its ppo.py `__main__`), which are CleanRL's.
CARTPOLE = {
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
# PureJaxRL's MinAtar settings (examples/brax_minatar.ipynb), run for 122 of their 1,220 updates.
BREAKOUT = {
    **CARTPOLE,
    "LR": 5e-3,
    "NUM_ENVS": 64,
    "NUM_STEPS": 128,
    "TOTAL_TIMESTEPS": 122 * 64 * 128,
    "NUM_MINIBATCHES": 8,
    "ACTIVATION": "relu",
    "ENV_NAME": "Breakout-MinAtar",
}
WIDE_BATCH = 256  # Environments from which both sides run one XLA:CPU thread per core by default.
DISPATCH_STEPS = 2**20  # podracer dispatches at most this many steps at a time (at least one update).
# Per task: podracer's config file, its overrides for the same run, and PureJaxRL's settings.
TASKS = {
    "cartpole": ("anakin_cartpole_ppo.py", {}, CARTPOLE),
    "breakout": ("anakin_minatar_breakout_ppo.py", {"total_steps": 122 * 64 * 128}, BREAKOUT),
}


def _gymnax_splits_done(gymnax) -> bool:
    """Whether this gymnax's `step` returns terminated and truncated apart (1.0 on), not the one `done` of 0.0.x."""
    env, params = gymnax.make("CartPole-v1")
    import jax

    outputs = jax.eval_shape(env.step, jax.random.key(0), env.reset(jax.random.key(0), params)[1], 0, params)
    return len(outputs) == 6


def _with_one_done_flag(make):
    """`gymnax.make` whose environments' `step` returns gymnax 0.0.x's `(obs, state, reward, done, info)`.

    PureJaxRL's ppo.py was written against gymnax 0.0.x; with gymnax 1.0 its step
    returns terminated and truncated apart, and `done` is their union.
    """

    class OneDoneFlag:
        def __init__(self, env):
            self._env = env

        def __getattr__(self, name):
            return getattr(self._env, name)

        def step(self, key, state, action, params=None):
            obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
            return obs, state, reward, terminated | truncated, info

    def wrapped(name, **kwargs):
        env, params = make(name, **kwargs)
        return OneDoneFlag(env), params

    return wrapped


def _dispatches(updates: int, most: int) -> tuple[int, int]:
    """(updates per podracer dispatch, updates in all) for a run of `updates`: both sides make the same updates.

    The largest divisor of `updates` up to `most` (at least one); where none
    comes within half of `most`, `most` per dispatch and the last partial
    dispatch's updates dropped on both sides.
    """
    most = max(1, most)
    per_dispatch = max(d for d in range(1, most + 1) if updates % d == 0) if updates else most
    if 2 * per_dispatch < most:
        per_dispatch = most
    return per_dispatch, updates // per_dispatch * per_dispatch


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--purejaxrl", required=True, help="a PureJaxRL checkout (the folder holding purejaxrl/ppo.py)")
    parser.add_argument("--task", choices=sorted(TASKS), default="cartpole")
    parser.add_argument("--pairs", type=int, default=6, help="alternating runs of each")
    parser.add_argument(
        "--cpu-threads", type=int, default=None, help="XLA:CPU threads for both (0: one per core; default: see above)"
    )
    parser.add_argument("--num-envs", type=int, default=None, help="environments in both (default: the task's)")
    parser.add_argument("--total-steps", type=float, default=None, help="environment steps per run in both")
    args = parser.parse_args(argv)
    for name in ("num_envs", "total_steps"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if not os.path.isfile(os.path.join(args.purejaxrl, "purejaxrl", "ppo.py")):
        parser.error(f"--purejaxrl: no purejaxrl/ppo.py under {args.purejaxrl}; pass the checkout's top folder")

    from podracer import load_config as load
    from podracer.runtime.xla_cpu import set_cpu_threads

    config_file, overrides, purejaxrl_config = TASKS[args.task]
    overrides, purejaxrl_config = dict(overrides), dict(purejaxrl_config)
    if args.num_envs is not None:
        purejaxrl_config["NUM_ENVS"] = overrides["num_envs"] = args.num_envs
    if args.total_steps is not None:
        purejaxrl_config["TOTAL_TIMESTEPS"] = args.total_steps
    config = load(os.path.join(CONFIGS, config_file), overrides)
    batch = purejaxrl_config["NUM_ENVS"] * purejaxrl_config["NUM_STEPS"]
    updates = int(purejaxrl_config["TOTAL_TIMESTEPS"]) // batch  # PureJaxRL's NUM_UPDATES.
    config.updates_per_dispatch, updates = _dispatches(
        updates, min(config.updates_per_dispatch, DISPATCH_STEPS // batch)
    )
    if updates == 0:
        parser.error(f"--total-steps: fewer than one dispatch of {config.updates_per_dispatch} x {batch:,} steps")
    steps = purejaxrl_config["TOTAL_TIMESTEPS"] = config.total_steps = updates * batch
    if args.cpu_threads is not None:
        config.cpu_threads = args.cpu_threads
    elif config.num_envs >= WIDE_BATCH:
        config.cpu_threads = 0
    set_cpu_threads(config.cpu_threads)  # Before JAX starts, for both programs.
    import jax

    import podracer

    checkout = os.path.abspath(args.purejaxrl)
    sys.path[:0] = [checkout, os.path.join(checkout, "purejaxrl")]  # Its ppo.py imports its own `wrappers`.
    import gymnax

    try:
        import navix  # noqa: F401 -- PureJaxRL's wrappers.py imports it for a wrapper ppo.py does not use.
    except ImportError:
        sys.modules["navix"] = types.ModuleType("navix")  # A stand-in, so that wrappers.py imports without it.
    if _gymnax_splits_done(gymnax):
        gymnax.make = _with_one_done_flag(gymnax.make)
    from purejaxrl.ppo import make_train

    purejaxrl_run = jax.jit(make_train(purejaxrl_config)).lower(jax.random.PRNGKey(0)).compile()

    def time_purejaxrl(seed: int) -> float:
        start = time.perf_counter()
        jax.block_until_ready(purejaxrl_run(jax.random.PRNGKey(seed)))
        return steps / (time.perf_counter() - start)

    def time_podracer(seed: int) -> float:
        config.seed = seed
        history = podracer.train(config).history  # Each record's rate leaves compilation out.
        per_dispatch = history[0]["step"]
        return history[-1]["step"] / sum(per_dispatch / record["steps_per_second"] for record in history)

    print(
        f"{args.task}: {purejaxrl_config['NUM_ENVS']} environments, XLA:CPU threads="
        f"{os.environ.get('PJRT_NPROC', 'one per core')}, {steps:,} steps per run"
    )
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
