"""Normalised scores of the offline agents on a family of datasets: a table, not a CI test (docs/offline.md).

For each dataset and agent, one population of seeds (`config.population.seed`,
one program) trains from the dataset with the agent's shipped config and
its overrides, and ends with an evaluation of `--episodes` episodes. Each
member's score is the return of that evaluation, normalised as D4RL's,
100 x (return - random) / (expert - random), with `random` and `expert` the mean
returns of the datasets named so; the IQM and mean over the seeds, with 95%
stratified-bootstrap intervals, come from `podracer plot --aggregate`'s code
(`podracer.plot.aggregate`, the `stats` extra). Usage:

    python -m scripts.offline_scores --datasets datasets --family pendulum --out runs/offline \\
        --agents bc td3_bc iql rebrac --set total_steps=20000 --set network.hidden_sizes="(64, 64)"
"""

import argparse
import json
import os

import podracer
from podracer.offline import minari_files
from podracer.plot import aggregate

KINDS = ("random", "medium", "medium-replay", "expert")


def dataset_returns(folder: str, family: str) -> dict[str, float]:
    """The mean episode return of each dataset `FAMILY-KIND-v0` in `folder`."""
    returns = {}
    for kind in KINDS:
        path = os.path.join(folder, f"{family}-{kind}-v0")
        if os.path.isdir(path):
            returns[kind] = minari_files.read(path)[3]["mean_return"]
    return returns


def train(agent: str, family: str, dataset: str, out: str, seeds: int, episodes: int, overrides: dict) -> str:
    """A population of `seeds` seeds of `agent` on `dataset`; its workdir. A run an earlier call finished, or was
    stopped in, resumes from its checkpoint (and a finished one has nothing left to do)."""
    workdir = os.path.join(out, f"{os.path.basename(dataset)}-{agent}")
    fields = {"offline.dataset": dataset, "population.seed": tuple(range(seeds)), **overrides}
    config = podracer.load_config(f"configs/anakin_{family}_{agent}.py", fields)
    config.evaluation.every_steps, config.evaluation.episodes = config.total_steps, episodes
    podracer.train(config, workdir=workdir)
    return workdir


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", required=True, help="the folder of the datasets FAMILY-KIND-v0")
    parser.add_argument("--family", default="pendulum", help="the datasets' and configs' family name")
    parser.add_argument("--out", required=True, help="where the runs' workdirs go")
    parser.add_argument("--agents", nargs="+", default=["bc", "td3_bc", "iql", "rebrac"])
    parser.add_argument("--kinds", nargs="+", choices=KINDS, help="the datasets to train on (default: every one)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=100, help="the final evaluation's episodes")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="a config override")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.set)
    returns = dataset_returns(args.datasets, args.family)
    low, high = returns["random"], returns["expert"]
    rows = []
    for kind in args.kinds or list(returns):
        for agent in args.agents:
            dataset = os.path.join(args.datasets, f"{args.family}-{kind}-v0")
            workdir = train(agent, args.family, dataset, args.out, args.seeds, args.episodes, overrides)
            (group,) = aggregate.statistics([workdir])
            normalised = [
                100 * (value - low) / (high - low) for value in (group.iqm.point, group.iqm.low, group.iqm.high)
            ]
            rows.append({"dataset": kind, "agent": agent, "returns": group.scores.tolist(), "iqm": normalised})
            print(json.dumps(rows[-1]), flush=True)
    print("| dataset | its return | agent | IQM, normalised (95% interval) | returns of the seeds |")
    print("| --- | ---: | --- | ---: | --- |")
    for row in rows:
        score, low_end, high_end = row["iqm"]
        seeds = ", ".join(f"{value:.0f}" for value in row["returns"])
        print(
            f"| {row['dataset']} | {returns[row['dataset']]:.0f} | `{row['agent']}` | {score:.0f} ({low_end:.0f} to {high_end:.0f}) | {seeds} |"
        )


if __name__ == "__main__":
    main()
