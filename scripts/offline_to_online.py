"""Offline-to-online fine-tuning against its ablations, over seeds: a table, not a CI test (docs/offline.md).

For each seed, an agent trains offline from a dataset (the offline config,
`offline.dataset`), and then goes on online from that run (the fine-tuning
config, `offline.start_from`), once with the dataset first in its replay
buffer (the papers' recipe) and once without (`offline.keep_data=False`).
The same fine-tuning config also trains from scratch (no `start_from`), for
the same environment steps. The online runs evaluate `--episodes` greedy
episodes at the config's evaluation steps, the offline one at its end (its
row repeats it); the table gives each arm's IQM over the seeds at each of
those steps, with a 95% stratified-bootstrap interval (`podracer.plot.bootstrap`, the
`stats` extra), normalised as D4RL's when `--random` and `--expert` returns
are given. Usage:

    python -m scripts.offline_to_online --dataset datasets/pendulum-medium-replay-v0 --out runs/o2o \\
        --offline configs/anakin_pendulum_iql.py --online configs/anakin_pendulum_iql_finetune.py \\
        --random -1237.7 --expert -157.2 --set "network.hidden_sizes=(64, 64)"
"""

import argparse
import json
import os

import numpy as np

import podracer
from podracer.plot import bootstrap

ARMS = ("offline", "online with the dataset", "online without it", "online from scratch")


def evaluations(config_path: str, fields: dict, workdir: str, episodes: int) -> dict[int, float]:
    """`{step: greedy return}` of the evaluations (`episodes` episodes each) of the run `config_path` with `fields`
    makes; the last is at its end."""
    config = podracer.load_config(config_path, fields)
    config.evaluation.episodes = episodes
    history = podracer.train(config, workdir=workdir).history
    return {record["step"]: record["eval_mean_return"] for record in history if "eval_mean_return" in record}


def seed_returns(args: argparse.Namespace, seed: int, overrides: dict) -> dict[str, dict[int, float]]:
    """Each arm's evaluations for one seed (the offline run's final one alone)."""
    offline_dir = os.path.join(args.out, f"offline-{seed}")
    common = {"seed": seed, **overrides}
    offline = evaluations(args.offline, {**common, "offline.dataset": args.dataset}, offline_dir, args.episodes)
    returns = {"offline": {0: offline[max(offline)]}}
    arms = {
        "online with the dataset": {"offline.start_from": offline_dir},
        "online without it": {"offline.start_from": offline_dir, "offline.keep_data": False},
        "online from scratch": {"offline.start_from": ""},
    }
    for arm, fields in arms.items():
        workdir = os.path.join(args.out, f"{arm.replace(' ', '-')}-{seed}")
        returns[arm] = evaluations(args.online, {**common, **fields}, workdir, args.episodes)
    return returns


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True, help="the dataset the offline runs learn from")
    parser.add_argument("--offline", required=True, help="the offline config (e.g. configs/anakin_pendulum_iql.py)")
    parser.add_argument("--online", required=True, help="the fine-tuning config, whose offline.start_from is set")
    parser.add_argument("--out", required=True, help="where the runs' workdirs go")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=100, help="each run's final evaluation's episodes")
    parser.add_argument("--random", type=float, help="the random policy's return, to normalise by")
    parser.add_argument("--expert", type=float, help="the expert's return, to normalise by")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="a config override")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.set)
    per_seed = []
    for seed in range(args.seeds):
        per_seed.append(seed_returns(args, seed, overrides))
        print(json.dumps({"seed": seed, **per_seed[-1]}), flush=True)
    normalise = (
        (lambda x: x) if args.random is None else (lambda x: 100 * (x - args.random) / (args.expert - args.random))
    )
    steps = sorted(per_seed[0]["online with the dataset"])
    print("| arm | " + " | ".join(f"{step:,} steps" for step in steps) + " |")
    print("| --- |" + " ---: |" * len(steps))
    for arm in ARMS:
        cells = []
        for step in steps:
            scores = np.array([returns[arm].get(step, returns[arm].get(0)) for returns in per_seed])
            iqm, _ = bootstrap.final_estimates(
                scores[:, None], bootstrap.DEFAULT_REPS, bootstrap.CONFIDENCE, bootstrap.SEED
            )
            point, low, high = (normalise(value) for value in (iqm.point, iqm.low, iqm.high))
            cells.append(f"{point:.1f} ({low:.1f} to {high:.1f})")
        print(f"| {arm} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
