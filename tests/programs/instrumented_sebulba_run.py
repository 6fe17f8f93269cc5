"""A small Sebulba training that records where each trajectory's shards live and which parameter versions flow.

Wrappers around the real functions record every published parameter version,
every version an actor asks for (with the device it lands on), and the shards of
every trajectory the learner's update receives. Usage:

    python -m tests.programs.instrumented_sebulba_run '{"policy_lag": 0, ...}'

with config overrides as JSON (lists are read as tuples); prints one JSON line.
"""

import dataclasses
import importlib
import json
import sys

import jax
import numpy as np

import podracer
from podracer.sebulba import parameter_versions
from tests.helpers import overrides_from_json, small_sebulba_cartpole

train_module = importlib.import_module("podracer.sebulba.sebulba_train")  # The module, not a function of that name.


def checksum(params) -> float:
    return float(sum(np.sum(np.asarray(leaf, np.float64)) for leaf in jax.tree.leaves(params)))


def main(argv):
    overrides = overrides_from_json(argv[1])
    published, received, shards = {}, [], []

    versions = parameter_versions.ParameterVersions
    real_publish, real_get = versions.publish, versions.get

    def publish(self, version, params):
        published[version] = checksum(params)
        real_publish(self, version, params)

    def get(self, version, device, timeout):
        params = real_get(self, version, device, timeout)
        placed = sorted(d.id for d in jax.tree.leaves(params)[0].devices())
        received.append((version, device.id, placed, checksum(params)))
        return params

    versions.publish, versions.get = publish, get

    real_build = train_module.build

    def build(*args, **kwargs):
        """The real run, whose compiled update records the shards of what it is given."""
        run = real_build(*args, **kwargs)
        update = run.update

        def recorded(state, trajectories, key):
            leaf = trajectories[0].timestep.observation
            shards.append([(s.device.id, s.index[1].start, s.index[1].stop) for s in leaf.addressable_shards])
            return update(state, trajectories, key)

        return dataclasses.replace(run, update=recorded)

    train_module.build = build

    result = podracer.train(small_sebulba_cartpole(**overrides))
    summary = {
        "published": published,
        "received": received,
        "shards": shards,
        "records": result.history,
        "params_devices": sorted(d.id for d in jax.tree.leaves(result.learner_state.params)[0].devices()),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main(sys.argv)
