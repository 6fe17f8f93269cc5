"""Side-by-side throughput against PureJaxRL's single-file PPO, on CartPole (feed-forward or GRU) or MinAtar Breakout.

PureJaxRL (github.com/luchris429/purejaxrl) is not a dependency of podracer:
point `--purejaxrl` at a checkout, in an environment with its requirements
(gymnax, distrax). Its single-file trainers run the whole run as one compiled
program. `--task cartpole` (the default) runs CleanRL's CartPole workload in
both (4 envs x 128 steps, 4 epochs x 4 minibatches, 5e5 steps; PureJaxRL's
`purejaxrl/ppo.py` against podracer's `configs/anakin_cartpole_ppo.py`, on its
own pure-JAX CartPole). `--task cartpole_rnn` runs the same workload with
PureJaxRL's recurrent network (ReLU 128 embedding, GRU 128, ReLU 128 heads;
minibatches of whole environments): its `purejaxrl/ppo_rnn.py` against
`configs/anakin_cartpole_ppo_rnn.py`. `--task breakout` runs PureJaxRL's MinAtar
settings on gymnax's Breakout-MinAtar in both (64 envs x 128 steps, 4 epochs x
8 minibatches, ReLU 64-64 actor and critic; podracer's
`configs/anakin_minatar_breakout_ppo.py` through its gymnax adapter), for 122
updates (1e6 steps) instead of 1e7 steps.

By default both are compiled first and PureJaxRL's program run once to warm
the process up, then full runs alternate in this one process, so the two see
the same machine load; on a shared VM only such paired figures mean anything.
With `--fresh-processes` each timed run has a new Python process of its own
instead, PureJaxRL and podracer taking turns (who goes first alternates from
pair to pair), so that neither run inherits the other's memory, threads or
warm caches: each times the first execution of its freshly compiled program.
Compilation is left out of both either way (`purejaxrl_runs`). Each run's
final return, the mean of its last 100 episodes, is printed beside its speed.
Usage:

    python -m scripts.compare_purejaxrl --purejaxrl ~/purejaxrl [--task cartpole_rnn] [--pairs 6] [--fresh-processes]

`--num-envs N` and `--total-steps S` change the batch and the length of the
run on both sides alike (PureJaxRL's NUM_ENVS and TOTAL_TIMESTEPS, podracer's
num_envs and total_steps, in whole updates and whole dispatches of podracer's,
so that both make the same updates); every other hyperparameter stays the task's,
so minibatches grow with the batch (N x 128 / 4 transitions on CartPole, N / 4
environments with the GRU). podracer dispatches as its config says (16 log
records a run on CleanRL's CartPole: 61 updates at a time; about 100 with the
GRU) or at most `--updates-per-dispatch K` updates at a time, and never more
than `DISPATCH_STEPS` steps. Each dispatch costs podracer a round trip to the
host: on the CartPole tasks K = 61 runs about 10% faster than 8.
Both run with XLA:CPU's thread pool sized by `--cpu-threads` (0: XLA's
default of one thread per core; start the script with `PJRT_NPROC` unset). By
default that is the podracer config's `cpu_threads` (one thread) below
`WIDE_BATCH` environments and one per core from there up: on the 2-core CI
machine a second thread makes PPO on CartPole 1.5x as fast on both sides at
256 and at 2,048 environments, while it slows CleanRL's 4 environments down.

    python -m scripts.compare_purejaxrl --purejaxrl ~/purejaxrl --num-envs 2048 --total-steps 1e7
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import NamedTuple

from ml_collections import ConfigDict

from scripts import module_command, on_path, purejaxrl_runs

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
# ppo_rnn.py's `__main__` settings are ppo.py's; its network is ReLU throughout and reads no ACTIVATION.
CARTPOLE_RNN = {name: value for name, value in CARTPOLE.items() if name != "ACTIVATION"}
WIDE_BATCH = 256  # Environments from which both sides run one XLA:CPU thread per core by default.
DISPATCH_STEPS = 2**20  # podracer dispatches at most this many steps at a time (at least one update).
SIDES = ("purejaxrl", "podracer")
RESULT = "RESULT "  # How a fresh process's line of results starts.


class Task(NamedTuple):
    config_file: str  # podracer's, under configs/.
    overrides: dict  # Its fields set for the same run.
    settings: dict  # PureJaxRL's config.
    module: str  # PureJaxRL's trainer: purejaxrl/<module>.py.


TASKS = {
    "cartpole": Task("anakin_cartpole_ppo.py", {}, CARTPOLE, "ppo"),
    "cartpole_rnn": Task("anakin_cartpole_ppo_rnn.py", {}, CARTPOLE_RNN, "ppo_rnn"),
    "breakout": Task("anakin_minatar_breakout_ppo.py", {"total_steps": 122 * 64 * 128}, BREAKOUT, "ppo"),
}


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


def fresh_run_order(pairs: int, sides: tuple[str, str] = SIDES) -> list[tuple[int, str]]:
    """(seed, side) of each timed run in turn: pair i runs both sides on seed i, who goes first alternating."""
    return [(seed, side) for seed in range(pairs) for side in (sides if seed % 2 == 0 else sides[::-1])]


def side_command(args: argparse.Namespace, side: str, seed: int) -> list[str]:
    """The command line of the fresh process that times one run of `side` on `seed`, with the same run's flags."""
    flags = ["--purejaxrl", args.purejaxrl, "--task", args.task]
    names = ("--cpu-threads", "--num-envs", "--updates-per-dispatch")
    for flag, value in zip(names, (args.cpu_threads, args.num_envs, args.updates_per_dispatch), strict=True):
        if value is not None:
            flags += [flag, str(value)]
    if args.total_steps is not None:
        flags += ["--total-steps", repr(args.total_steps)]
    return rerun_command("scripts.compare_purejaxrl", flags, side, seed)


def rerun_command(module: str, flags: list[str], side: str, seed: int) -> list[str]:
    """`module` (`scripts.NAME`) run again with `flags` in a fresh process, to time one run of `side` on `seed`."""
    return module_command(module, *flags, "--side", side, "--seed", str(seed))


def fresh_pairs(module: str, flags: list[str], pairs: int, sides: tuple[str, str], env: dict) -> dict[int, dict]:
    """`{seed: {side: result}}` of `pairs` pairs of timed runs of `module` with `flags`, each run in a fresh process
    (`rerun_command`), the sides taking turns (`fresh_run_order`)."""
    results: dict[int, dict] = {}
    for seed, side in fresh_run_order(pairs, sides):
        results.setdefault(seed, {})[side] = fresh_result(rerun_command(module, flags, side, seed), side, seed, env)
    return results


def fresh_result(command: list[str], side: str, seed: int, env: dict | None = None) -> dict:
    """The results of one timed run, `side` on `seed`, that `command` makes in a fresh process (`env`, this one's by
    default, with the repository root on its PYTHONPATH); exits if it fails."""
    child = subprocess.run(command, capture_output=True, text=True, env=on_path(env))
    if child.returncode:
        sys.exit(f"{side} run on seed {seed} failed ({child.returncode}):\n{child.stderr[-4000:]}")
    return read_result(child.stdout)


def read_result(stdout: str) -> dict:
    """The results a fresh process printed on its last line starting with `RESULT`."""
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT)]
    if not lines:
        raise ValueError(f"no line starting with {RESULT!r} in the run's output:\n{stdout[-2000:]}")
    return json.loads(lines[-1][len(RESULT) :])


def make_parser() -> argparse.ArgumentParser:
    """The command line; `--side` and `--seed` are what `--fresh-processes` starts each of its processes with."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--purejaxrl", required=True, help="a PureJaxRL checkout (the folder holding purejaxrl/ppo.py)")
    parser.add_argument("--task", choices=sorted(TASKS), default="cartpole")
    parser.add_argument("--pairs", type=int, default=6, help="alternating runs of each")
    parser.add_argument("--fresh-processes", action="store_true", help="each timed run in a new process of its own")
    parser.add_argument(
        "--cpu-threads", type=int, default=None, help="XLA:CPU threads for both (0: one per core; default: see above)"
    )
    parser.add_argument("--num-envs", type=int, default=None, help="environments in both (default: the task's)")
    parser.add_argument("--total-steps", type=float, default=None, help="environment steps per run in both")
    parser.add_argument(
        "--updates-per-dispatch", type=int, default=None, help="podracer's at most (default: its config's, see above)"
    )
    # What --fresh-processes starts each process with: time one run of one side, print its RESULT line.
    parser.add_argument("--side", choices=SIDES, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    return parser


def plan(args: argparse.Namespace) -> tuple[ConfigDict, dict, int]:
    """(podracer's config, PureJaxRL's settings, steps per run) for the same run: whole updates, whole dispatches."""
    from podracer import load_config
    from podracer.anakin import anakin_settings

    task = TASKS[args.task]
    overrides, settings = dict(task.overrides), dict(task.settings)
    if args.num_envs is not None:
        settings["NUM_ENVS"] = overrides["num_envs"] = args.num_envs
    if args.total_steps is not None:
        settings["TOTAL_TIMESTEPS"] = args.total_steps
    config = load_config(os.path.join(CONFIGS, task.config_file), overrides)
    batch = settings["NUM_ENVS"] * settings["NUM_STEPS"]
    updates = int(settings["TOTAL_TIMESTEPS"]) // batch  # PureJaxRL's NUM_UPDATES.
    config.total_steps = updates * batch
    most = min(args.updates_per_dispatch or anakin_settings.updates_per_dispatch(config), DISPATCH_STEPS // batch)
    config.updates_per_dispatch, updates = _dispatches(updates, most)
    if updates == 0:
        raise ValueError(f"--total-steps: fewer than one dispatch of {config.updates_per_dispatch} x {batch:,} steps")
    steps = settings["TOTAL_TIMESTEPS"] = config.total_steps = updates * batch
    if args.cpu_threads is not None:
        config.cpu_threads = args.cpu_threads
    elif config.num_envs >= WIDE_BATCH:
        config.cpu_threads = 0
    return config, settings, steps


def runners(args: argparse.Namespace, config: ConfigDict, settings: dict, steps: int, sides=SIDES) -> dict:
    """`{side: run(seed) -> (steps/s, final return)}`, PureJaxRL's compiled; JAX starts here."""
    from podracer.devices.xla_cpu import set_cpu_threads

    set_cpu_threads(config.cpu_threads)  # Before JAX starts, for both programs.
    run = {}
    if "purejaxrl" in sides:
        make_train = purejaxrl_runs.purejaxrl_make_train(args.purejaxrl, TASKS[args.task].module)
        run["purejaxrl"] = purejaxrl_runs.purejaxrl_runner(make_train, settings, steps)
    if "podracer" in sides:
        run["podracer"] = purejaxrl_runs.podracer_runner(config)
    return run


def pair_line(theirs: tuple[float, float], ours: tuple[float, float]) -> str:
    """One pair's speeds and final returns, and podracer's speed-up."""
    return (
        f"PureJaxRL {theirs[0]:>9,.0f} steps/s (return {theirs[1]:5.1f})   "
        f"podracer {ours[0]:>9,.0f} steps/s (return {ours[1]:5.1f})   speed-up {ours[0] / theirs[0]:.2f}"
    )


def in_process_pairs(run: dict, pairs: int) -> list[float]:
    """Speed-ups of `pairs` pairs of runs alternating in this process."""
    run["purejaxrl"](0)  # Warm-up, of this process as a whole: podracer's runs come after it.
    speed_ups = []
    for seed in range(pairs):
        theirs, ours = run["purejaxrl"](seed), run["podracer"](seed)
        speed_ups.append(ours[0] / theirs[0])
        print(pair_line(theirs, ours), flush=True)
    return speed_ups


def fresh_process_pairs(args: argparse.Namespace) -> list[float]:
    """Speed-ups of `args.pairs` pairs of runs, each run in a fresh process of its own, the sides taking turns."""
    results: dict[int, dict] = {}
    for seed, side in fresh_run_order(args.pairs):
        result = fresh_result(side_command(args, side, seed), side, seed)
        pair = results.setdefault(seed, {})
        pair[side] = (result["steps_per_second"], result["final_return"])
        if len(pair) == len(SIDES):
            print(pair_line(pair["purejaxrl"], pair["podracer"]), flush=True)
    return [results[seed]["podracer"][0] / results[seed]["purejaxrl"][0] for seed in range(args.pairs)]


def main(argv=None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    for name in ("num_envs", "total_steps", "pairs", "updates_per_dispatch"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    module = TASKS[args.task].module
    if not os.path.isfile(os.path.join(args.purejaxrl, "purejaxrl", f"{module}.py")):
        parser.error(f"--purejaxrl: no purejaxrl/{module}.py under {args.purejaxrl}; pass the checkout's top folder")
    try:
        config, settings, steps = plan(args)
    except ValueError as error:
        parser.error(str(error))
    if args.side is not None:  # One fresh process's run.
        rate, final_return = runners(args, config, settings, steps, sides=(args.side,))[args.side](args.seed)
        print(RESULT + json.dumps({"side": args.side, "steps_per_second": rate, "final_return": final_return}))
        return 0
    threads = os.environ.get("PJRT_NPROC") or config.cpu_threads or "one per core"
    how = "each run in a fresh process" if args.fresh_processes else "alternating in one process"
    print(
        f"{args.task}: {settings['NUM_ENVS']} environments, XLA:CPU threads={threads}, {steps:,} steps per run, {how}"
    )
    if args.fresh_processes:
        speed_ups = fresh_process_pairs(args)
    else:
        speed_ups = in_process_pairs(runners(args, config, settings, steps), args.pairs)
    print(f"median speed-up over {args.pairs} pairs: {statistics.median(speed_ups):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
