"""Final returns of every shipped CartPole config on seeds 0-4: a table, not a CI test.

Each run trains a config to its full length in a fresh process and reports
the mean return of its last 100 episodes (`podracer.recent_return`: Gym's
"solved" criterion for CartPole is 475 over 100 consecutive episodes; the
last log window alone may hold only a few episodes). Sebulba configs run with their
default policy lag and with the other one (0 <-> 1), on 1 actor + 1 learner
CPU device (the CPU split in two, as on this 2-core machine); Anakin configs
on one device. Runs are deterministic for a seed, lag and device count, so
running `--jobs` of them side by side changes their speed, not their results.
Usage:

    python -m scripts.seed_sweep                         # every CartPole config, seeds 0-4
    python -m scripts.seed_sweep --only sebulba_cartpole_impala --seeds 0 1 2
    python -m scripts.seed_sweep --only sebulba_cartpole_ppo --set agent.num_epochs=2   # try a change
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

from podracer.devices.xla_cpu import child_environment
from scripts import module_command, on_path

CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs")
CARTPOLE_CONFIGS = (
    "anakin_cartpole_ppo",
    "sebulba_cartpole_impala",
    "sebulba_cartpole_ppo",
    "sebulba_gymnasium_cartpole",
)
SOLVED = 475.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=CARTPOLE_CONFIGS, action="append", help="run only these configs")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(5)))
    parser.add_argument("--jobs", type=int, default=2, help="runs side by side")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="override in every run")
    parser.add_argument("--run", nargs=3, metavar=("CONFIG", "SEED", "LAG"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:
        return run_one(*args.run, args.set)
    rows = [(name, lag) for name in args.only or CARTPOLE_CONFIGS for lag in lags(name)]
    runs = [(name, lag, seed) for name, lag in rows for seed in args.seeds]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        returns = dict(zip(runs, pool.map(lambda run: launch(*run, args.set), runs), strict=True))
    if args.set:
        print(f"with {' '.join(args.set)}")
    print(f"| config | policy lag | {' | '.join(f'seed {s}' for s in args.seeds)} | seeds >= {SOLVED:g} |")
    print(f"| --- | --- | {' | '.join('---:' for _ in args.seeds)} | ---: |")
    for name, lag in rows:
        finals = [returns[name, lag, seed] for seed in args.seeds]
        lag_text = "-" if lag is None else f"{lag}{' (default)' if lag == default_lag(name) else ''}"
        solved = sum(r >= SOLVED for r in finals)
        print(f"| `{name}` | {lag_text} | {' | '.join(f'{r:.0f}' for r in finals)} | {solved}/{len(finals)} |")
    return 0


def default_lag(name: str) -> int | None:
    from podracer import load_config as load

    config = load(os.path.join(CONFIGS, f"{name}.py"))
    return config.policy_lag if config.architecture == "sebulba" else None


def lags(name: str) -> list[int | None]:
    """The default policy lag first, then the other; Anakin has none."""
    lag = default_lag(name)
    return [None] if lag is None else [lag, 1 - lag]


def launch(name: str, lag: int | None, seed: int, overrides: list[str]) -> float:
    env = on_path(child_environment(devices=None if lag is None else 2))  # Sebulba: one actor and one learner device.
    command = module_command("scripts.seed_sweep", "--run", name, str(seed), str(lag))
    command += [f"--set={override}" for override in overrides]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if result.returncode:
        raise RuntimeError(f"{name} seed {seed} lag {lag} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])["final_return"]


def run_one(name: str, seed: str, lag: str, overrides: list[str]) -> int:
    import podracer

    overrides = dict(override.split("=", 1) for override in overrides)
    overrides |= {"seed": int(seed)} | ({} if lag == "None" else {"policy_lag": int(lag)})
    config = podracer.load_config(os.path.join(CONFIGS, f"{name}.py"), overrides)
    history = podracer.train(config).history
    print(json.dumps({"final_return": podracer.recent_return(history)}))  # Over the last 100 episodes.
    return 0


if __name__ == "__main__":
    sys.exit(main())
