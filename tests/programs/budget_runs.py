"""Trains Anakin Catch with each set of overrides in argv[1] (a JSON list) and prints each run's record steps.

python -m tests.programs.budget_runs '[{"num_envs": 8, "num_devices": 4, "total_steps": 33}]'

Prints one JSON line: `[{"record_steps": [...], "steps": N, "devices": D}, ...]`.
"""

import json
import sys

import jax

import podracer
from tests.helpers import load_config


def main(cases: list[dict]) -> None:
    results = []
    for fields in cases:
        result = podracer.train(load_config("anakin_catch", fields))
        devices = len(jax.tree.leaves(result.learner_state)[0].sharding.device_set)
        results.append({"record_steps": [r["step"] for r in result.history], "steps": result.steps, "devices": devices})
    print(json.dumps(results))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
