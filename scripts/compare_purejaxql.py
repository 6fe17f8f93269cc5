"""Side-by-side speed and return against purejaxql's PQN (Gallici et al. 2025) on gymnax's MinAtar Breakout.

purejaxql (github.com/mttga/purejaxql) is not a dependency of podracer: point
`--purejaxql` at a checkout, in an environment with gymnax. Its
`purejaxql/pqn_gymnax.py` trains with purejaxql's MinAtar settings
(`purejaxql/config/alg/pqn_minatar.yaml`) and its own Q-network at its
defaults (two dense layers of 128, LayerNorm, ReLU, over the flattened
frame), its in-training tests off; podracer trains
`configs/anakin_minatar_breakout_pqn.py`, the same settings and network, for
the same whole updates. Each timed run has a fresh process of its own, the two
sides taking turns (who goes first alternates from pair to pair);
compilation is left out on both sides (`purejaxrl_runs`). podracer
dispatches `--updates-per-dispatch` updates at a time (61 by default, as
`compare_purejaxrl.py` does).

Two ways to share the CPU. By default both run XLA:CPU with `--cpu-threads`
threads (PJRT_NPROC; 1 by default, podracer's Anakin default; 0: one per
core), podracer on one device. With `--whole-machine` each side uses every
core its own way: purejaxql with XLA's default pool of one thread per core,
podracer split into one XLA:CPU device per core (`config.cpu_devices`), one
thread each. There each device steps its share of the 128 environments and
takes each minibatch step on its share of the minibatch (32 minibatches of
its own 4,096 / D transitions, `agent.num_minibatches` counting per device),
the gradients averaged over devices: still 128 transitions and one RAdam
step per minibatch, 2 x 32 steps per update, as purejaxql. What differs is
only which transitions share a minibatch: each device shuffles its own
environments' transitions, so a minibatch holds 128 / D of each device's.

A run's return: podracer's is the mean of its last 100 episodes; purejaxql's
is what its log reports last, the mean over its environments of each one's
latest finished episode. The first counts short (low-scoring) episodes more
often than the second.

pqn_gymnax.py imports hydra, omegaconf, wandb and safetensors at the top, for
its command line, logging and saving, none of which a run here uses: a
stand-in serves for each that is missing. It was written against gymnax's
`step` of one `done` flag; on gymnax 1.0 its log wrapper is given one
(termination or time limit, as gymnax 0.0.x's `done` was).

    python -m scripts.compare_purejaxql --purejaxql ~/purejaxql [--pairs 3] [--total-steps 2e6] [--whole-machine]
"""

import argparse
import importlib
import json
import os
import statistics
import sys
import time
import types

from podracer.devices.xla_cpu import THREADS_ENV, child_environment
from scripts import purejaxrl_runs
from scripts.compare_purejaxrl import fresh_pairs

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "anakin_minatar_breakout_pqn.py")
# purejaxql's config/alg/pqn_minatar.yaml, with pqn_gymnax.py's network at its defaults and no in-training tests.
SETTINGS = {
    "TOTAL_TIMESTEPS": 1e7,
    "TOTAL_TIMESTEPS_DECAY": 1e7,
    "NUM_ENVS": 128,
    "NUM_STEPS": 32,
    "EPS_START": 1.0,
    "EPS_FINISH": 0.05,
    "EPS_DECAY": 0.1,
    "NUM_MINIBATCHES": 32,
    "NUM_EPOCHS": 2,
    "NORM_INPUT": False,
    "HIDDEN_SIZE": 128,
    "NUM_LAYERS": 2,
    "NORM_TYPE": "layer_norm",
    "LR": 5e-4,
    "MAX_GRAD_NORM": 10,
    "LR_LINEAR_DECAY": True,
    "GAMMA": 0.99,
    "LAMBDA": 0.65,
    "ENV_NAME": "Breakout-MinAtar",
    "ENV_KWARGS": {},
    "TEST_DURING_TRAINING": False,
    "WANDB_MODE": "disabled",
}
SIDES = ("purejaxql", "podracer")


def plan(total_steps: float, updates_per_dispatch: int, cpu_devices: int = 1):
    """(podracer's config on `cpu_devices` XLA:CPU devices, purejaxql's settings, steps per run): the same whole
    updates on both sides."""
    from podracer import load_config

    batch = SETTINGS["NUM_ENVS"] * SETTINGS["NUM_STEPS"]
    steps = int(total_steps) // batch * batch
    if steps == 0:
        raise ValueError(f"--total-steps: fewer than one update of {batch:,} steps")
    overrides = {"total_steps": steps, "updates_per_dispatch": updates_per_dispatch}
    config = load_config(CONFIG, {**overrides, "cpu_devices": cpu_devices, "num_devices": cpu_devices})
    return config, {**SETTINGS, "TOTAL_TIMESTEPS": steps, "TOTAL_TIMESTEPS_DECAY": steps}, steps


def purejaxql_trainer(checkout: str) -> types.ModuleType:
    """purejaxql's `pqn_gymnax` module from a checkout, with stand-ins for the imports a run does not use and a log
    wrapper of one `done` flag on gymnax 1.0."""
    purejaxrl_runs.stand_in_missing(("hydra", "omegaconf", "wandb", "safetensors", "safetensors.flax"))
    sys.path.insert(0, os.path.abspath(checkout))
    trainer = importlib.import_module("purejaxql.pqn_gymnax")
    import jax.numpy as jnp

    class OneDoneLogWrapper(trainer.LogWrapper):
        def step(self, key, state, action, params=None):
            outputs = super().step(key, state, action, params)
            if len(outputs) == 5:  # gymnax 0.0.x: one flag already.
                return outputs
            observation, state, reward, terminated, truncated, info = outputs
            info = {k: v for k, v in info.items() if k != "final_observation"}  # gymnax 1.0's, one per step.
            return observation, state, reward, jnp.logical_or(terminated, truncated), info

    trainer.LogWrapper = OneDoneLogWrapper
    return trainer


def run_purejaxql(checkout: str, settings: dict, steps: int, seed: int) -> tuple[float, float]:
    """(steps per second, final return) of one purejaxql run, compiled before the call that is timed."""
    import jax

    train = purejaxql_trainer(checkout).make_train(dict(settings))
    compiled = jax.jit(train).lower(jax.random.PRNGKey(seed)).compile()
    start = time.perf_counter()
    outputs = jax.block_until_ready(compiled(jax.random.PRNGKey(seed)))
    rate = steps / (time.perf_counter() - start)
    return rate, float(outputs["metrics"]["returned_episode_returns"][-1])


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--purejaxql", required=True, help="a purejaxql checkout (the folder holding purejaxql/)")
    parser.add_argument("--pairs", type=int, default=3, help="alternating runs of each")
    parser.add_argument("--total-steps", type=float, default=1e7, help="environment steps per run in both")
    parser.add_argument("--cpu-threads", type=int, default=1, help="XLA:CPU threads for both (0: one per core)")
    parser.add_argument(
        "--whole-machine",
        action="store_true",
        help="every core for each: purejaxql one thread per core, podracer one device per core",
    )
    parser.add_argument("--updates-per-dispatch", type=int, default=61, help="podracer's updates per dispatch")
    parser.add_argument("--side", choices=SIDES, default=None, help=argparse.SUPPRESS)  # One fresh process's run.
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    return parser


def one_run(args: argparse.Namespace) -> tuple[float, float]:
    """This process's timed run of `args.side` on `args.seed`."""
    config, settings, steps = plan(args.total_steps, args.updates_per_dispatch, podracer_devices(args))
    if args.side == "purejaxql":
        return run_purejaxql(args.purejaxql, settings, steps, args.seed)
    return purejaxrl_runs.podracer_runner(config)(args.seed)


def podracer_devices(args: argparse.Namespace) -> int:
    """podracer's XLA:CPU devices: one per core with `--whole-machine` (a divisor of the 128 environments), else 1."""
    if not args.whole_machine:
        return 1
    cores = os.cpu_count() or 1
    return max(d for d in (1, 2, 4, 8, 16, 32, 64, 128) if d <= cores)


def main(argv=None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if not os.path.isfile(os.path.join(args.purejaxql, "purejaxql", "pqn_gymnax.py")):
        parser.error(f"--purejaxql: no purejaxql/pqn_gymnax.py under {args.purejaxql}; pass the checkout's top folder")
    if args.side is not None:
        rate, final_return = one_run(args)
        print("RESULT " + json.dumps({"side": args.side, "steps_per_second": rate, "final_return": final_return}))
        return 0
    _, _, steps = plan(args.total_steps, args.updates_per_dispatch)
    env = child_environment(threads=0 if args.whole_machine else args.cpu_threads)
    threads = env.get(THREADS_ENV, "one per core")  # Unset: PJRT's default.
    devices = podracer_devices(args)
    setting = (
        f"purejaxql one XLA:CPU thread per core, podracer {devices} XLA:CPU devices of one thread"
        if args.whole_machine
        else f"XLA:CPU threads={threads}, podracer on one device"
    )
    print(f"Breakout-MinAtar: {steps:,} steps per run, {setting}, fresh processes")
    results = {
        seed: {side: (result["steps_per_second"], result["final_return"]) for side, result in pair.items()}
        for seed, pair in fresh_pairs("scripts.compare_purejaxql", argv or sys.argv[1:], args.pairs, SIDES, env).items()
    }
    for seed in range(args.pairs):
        (theirs, their_return), (ours, our_return) = results[seed]["purejaxql"], results[seed]["podracer"]
        print(
            f"seed {seed}: purejaxql {theirs:>9,.0f} steps/s (return {their_return:5.1f})   "
            f"podracer {ours:>9,.0f} steps/s (return {our_return:5.1f})   speed-up {ours / theirs:.2f}"
        )
    speed_ups = [results[s]["podracer"][0] / results[s]["purejaxql"][0] for s in range(args.pairs)]
    print(f"median speed-up over {args.pairs} pairs: {statistics.median(speed_ups):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
