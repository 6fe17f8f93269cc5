"""A sweep's throughput three ways, side by side in one process: trials per hour (docs/tuning.md).

The same trials (Optuna's random sampler, seeded, so each way asks for the
same values in the same order) of a config's search space run:

- `parallel`: `podracer sweep --parallel P`, P trials as the members of one program;
- `in turn`: `--parallel` trials in one program, `members_in_parallel=1`: each member
  alone inside it, one after another, bitwise its own run;
- `alone`: `podracer sweep --parallel 1`, one trial's own config after another;
- `optuna`: Optuna's own loop (`study.optimize`) calling `podracer.train` per trial.

Each way runs `--trials` trials (`--parallel-trials` for the parallel way,
which may run more: a rate is a rate). The table gives trials per hour, and
the largest difference between each way's objectives and those of the trials
run alone. Usage:

    python -m scripts.sweep_throughput --config configs/anakin_cartpole_ppo.py \\
        --space configs/spaces/cartpole_ppo.yaml --trials 16 --parallel-trials 64 --parallel 64 --out runs/sweeps
"""

import argparse
import os
import shutil
import time

import optuna

import podracer
from podracer.tuning import sweep, trial_runs


def timed_sweep(
    args: argparse.Namespace, name: str, trials: int, parallel: int, overrides: dict | None = None
) -> tuple[float, list[float]]:
    """Seconds and the objectives of a `podracer sweep` of `trials` trials, `parallel` at a time."""
    workdir = os.path.join(args.out, name)
    shutil.rmtree(workdir, ignore_errors=True)
    search = {"trials": trials, "parallel": parallel, "sampler": "random"}
    setup = sweep.prepare(args.config, overrides or {}, args.space, workdir, **search)
    start = time.perf_counter()
    study = sweep.run(setup, podracer.train)
    return time.perf_counter() - start, [trial.value for trial in study.trials]


def timed_optuna_loop(args: argparse.Namespace, trials: int) -> tuple[float, list[float]]:
    """Seconds and the objectives of Optuna's `study.optimize`, each trial one `podracer.train` of its config."""
    setup = sweep.prepare(
        args.config, {}, args.space, os.path.join(args.out, "unused"), trials=trials, sampler="random"
    )
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=setup.config.seed))

    def objective(trial: optuna.trial.Trial) -> float:
        config = trial_runs.group_config(setup.config, [sweep.suggest(trial, setup.space)])
        return trial_runs.objective(podracer.train(config).history, setup.metric)

    start = time.perf_counter()
    study.optimize(objective, n_trials=trials)
    return time.perf_counter() - start, [trial.value for trial in study.trials]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True)
    parser.add_argument("--space", required=True)
    parser.add_argument("--trials", type=int, default=16, help="trials of the one-at-a-time ways")
    parser.add_argument("--parallel-trials", type=int, default=64, help="trials of the parallel way")
    parser.add_argument("--parallel", type=int, default=64, help="trials a program in the parallel way")
    parser.add_argument("--out", default="runs/sweep_throughput")
    args = parser.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    alone = "alone (podracer sweep --parallel 1)"
    in_turn = {"members_in_parallel": 1}
    runs = {
        f"parallel ({args.parallel} a program)": timed_sweep(args, "parallel", args.parallel_trials, args.parallel),
        f"in turn ({args.trials} a program, members_in_parallel=1)": timed_sweep(
            args, "in_turn", args.trials, args.trials, in_turn
        ),
        alone: timed_sweep(args, "alone", args.trials, 1),
        "optuna's loop calling podracer.train": timed_optuna_loop(args, args.trials),
    }
    baseline = args.trials / runs[alone][0]
    shared = min(len(values) for _, values in runs.values())
    reference = runs[alone][1][:shared]
    print("| way | trials | seconds | trials per hour | against alone | largest objective difference |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, (seconds, values) in runs.items():
        rate = len(values) / seconds
        difference = max(abs(a - b) for a, b in zip(values[:shared], reference, strict=True))
        print(
            f"| {name} | {len(values)} | {seconds:.0f} | {3600 * rate:,.0f} | {rate / baseline:.2f}x | {difference:.3g} |"
        )


if __name__ == "__main__":
    main()
