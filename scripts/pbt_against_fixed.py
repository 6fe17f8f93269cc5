"""Population-based training against the best member of the same population with its hyperparameters fixed.

For each seed, one population of a config's members (their learning rates
log-spaced between `--low` and `--high`, each member a seed of its own)
trains twice, alternately: with its hyperparameters fixed (`population.pbt`
off) and with PBT (`--ready-steps`, the paper's truncation and perturbation).
A run's score is its best member's mean return over its last 100 episodes;
the table gives each arm's IQM over the seeds with a 95% stratified-bootstrap
interval (`podracer.plot.bootstrap`, the `stats` extra), and each arm's
steps per second (every member's steps over the wall time from the first
record to the last, so ready points, logs and checkpoints count and the
compilation does not), the two arms taken in turn so that their rates are
side by side. Usage
(docs/tuning.md):

    python -m scripts.pbt_against_fixed --config configs/anakin_cartpole_ppo.py --out runs/pbt \\
        --set optimizer.anneal_lr=False
"""

import argparse
import json
import os

import numpy as np

import podracer
from podracer.plot import bootstrap
from podracer.run.contract import recent_return
from podracer.run.metrics_writer import MEMBERS

ARMS = ("fixed", "pbt")


def run(args: argparse.Namespace, seed: int, arm: str, overrides: dict) -> dict:
    """One population's best member's score, its median member's, and its steps per second."""
    members = args.members
    rates = np.geomspace(args.low, args.high, members)
    fields = {
        **overrides,
        "population.seed": tuple(seed * 1000 + member for member in range(members)),
        "population.optimizer.learning_rate": tuple(float(rate) for rate in rates),
        "population.pbt.ready_steps": args.ready_steps if arm == "pbt" else 0,
    }
    config = podracer.load_config(args.config, fields)
    history = podracer.train(config, workdir=os.path.join(args.out, f"{arm}-{seed}")).history
    scores = [recent_return([r[MEMBERS][m] for r in history]) for m in range(members)]
    first, last = history[0], history[-1]  # Wall time between them: dispatches, ready points, logs, checkpoints.
    rate = (last["step"] - first["step"]) * members / (last["wall_seconds"] - first["wall_seconds"])
    return {"best": max(scores), "median": float(np.median(scores)), "steps_per_second": rate}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True)
    parser.add_argument("--out", required=True, help="where the runs' workdirs go")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--low", type=float, default=1e-4, help="the lowest member's learning rate")
    parser.add_argument("--high", type=float, default=3e-2, help="the highest member's learning rate")
    parser.add_argument("--ready-steps", type=int, default=25_600, help="each member's steps between ready points")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="a config override")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.set)
    results = {arm: [] for arm in ARMS}
    for seed in range(args.seeds):
        for arm in ARMS if seed % 2 == 0 else reversed(ARMS):  # Alternating which goes first.
            results[arm].append(run(args, seed, arm, overrides))
            print(json.dumps({"seed": seed, "arm": arm, **results[arm][-1]}), flush=True)
    print("| arm | best member (IQM, 95% CI) | median member (IQM) | steps/s (mean over seeds) |")
    print("| --- | ---: | ---: | ---: |")
    for arm in ARMS:
        cells = []
        for measure in ("best", "median"):
            scores = np.array([result[measure] for result in results[arm]])[:, None]
            iqm, _ = bootstrap.final_estimates(scores, bootstrap.DEFAULT_REPS, bootstrap.CONFIDENCE, bootstrap.SEED)
            cells.append(
                f"{iqm.point:.1f} ({iqm.low:.1f} to {iqm.high:.1f})" if measure == "best" else f"{iqm.point:.1f}"
            )
        rate = np.mean([result["steps_per_second"] for result in results[arm]])
        print(f"| {arm} | {cells[0]} | {cells[1]} | {rate:,.0f} |")


if __name__ == "__main__":
    main()
