"""Several configs trained on the same seeds, side by side: each config's final returns, their IQM and its interval.

Each run trains one config on one seed to its full length in a fresh process
and reports the mean return of its last 100 episodes
(`podracer.recent_return`) and its environment steps per second over the
wall time from its first record to its last (compilation left out). The runs
go seed by seed, every config once per seed, the order of the configs
reversed on every other seed, so that no config always meets the host first
or last. The table gives each config's IQM over the seeds with a 95%
stratified-bootstrap interval (`podracer.plot.bootstrap`, the `stats`
extra), each seed's return and the mean steps per second. Usage (the
distributional agents against DQN, docs/benchmarks.md):

    python -m scripts.configs_side_by_side anakin_minatar_breakout_dqn anakin_minatar_breakout_c51 \\
        anakin_minatar_breakout_qr_dqn --seeds 0 1 2 3 4
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from podracer.devices.xla_cpu import child_environment
from scripts import ROOT, module_command, on_path


def launch(config: str, seed: int, overrides: list[str]) -> dict:
    """One run in a fresh process: `{"final_return", "steps_per_second"}`."""
    command = module_command("scripts.configs_side_by_side", "--run", config, str(seed))
    command += [f"--set={override}" for override in overrides]
    result = subprocess.run(command, env=on_path(child_environment()), capture_output=True, text=True, check=False)
    if result.returncode:
        raise RuntimeError(f"{config} seed {seed} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_one(config: str, seed: str, overrides: list[str]) -> int:
    import podracer

    fields = dict(override.split("=", 1) for override in overrides) | {"seed": int(seed)}
    history = podracer.train(podracer.load_config(os.path.join(ROOT, "configs", f"{config}.py"), fields)).history
    first, last = history[0], history[-1]
    rate = (last["step"] - first["step"]) / (last["wall_seconds"] - first["wall_seconds"])
    print(json.dumps({"final_return": podracer.recent_return(history), "steps_per_second": rate}))
    return 0


def table(results: dict[str, list[dict]], seeds: list[int]) -> list[str]:
    """The markdown rows: config, IQM (95% CI), each seed's final return, mean steps/s."""
    from podracer.plot import bootstrap

    lines = [
        f"| config | IQM (95% CI) | {' | '.join(f'seed {seed}' for seed in seeds)} | steps/s |",
        f"| --- | ---: | {' | '.join('---:' for _ in seeds)} | ---: |",
    ]
    for config, runs in results.items():
        finals = np.array([run["final_return"] for run in runs])
        iqm, _ = bootstrap.final_estimates(
            finals[:, None], bootstrap.DEFAULT_REPS, bootstrap.CONFIDENCE, bootstrap.SEED
        )
        rate = np.mean([run["steps_per_second"] for run in runs])
        returns = " | ".join(f"{value:.1f}" for value in finals)
        lines.append(f"| `{config}` | {iqm.point:.1f} ({iqm.low:.1f} to {iqm.high:.1f}) | {returns} | {rate:,.0f} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("configs", nargs="*", help="config names in configs/")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(5)))
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="override in every run")
    parser.add_argument("--run", nargs=2, metavar=("CONFIG", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:
        return run_one(*args.run, args.set)
    results = {config: [] for config in args.configs}
    for index, seed in enumerate(args.seeds):
        for config in args.configs if index % 2 == 0 else reversed(args.configs):
            results[config].append(launch(config, seed, args.set))
            print(json.dumps({"config": config, "seed": seed, **results[config][-1]}), flush=True)
    print("\n".join(table(results, args.seeds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
