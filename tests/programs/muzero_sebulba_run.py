"""A short Sebulba MuZero run on envpool CartPole with config overrides as JSON; prints what the learner did.

    python -m tests.programs.muzero_sebulba_run '{"learner_minibatches": 2, ...}'

Lists are read as tuples. Prints one JSON line: the learn calls, gradient
steps, each learner device's buffer position, and each record's loss.
"""

import json
import sys

import jax
import numpy as np

import podracer
from tests.helpers import load_config, overrides_from_json


def main(argv):
    overrides = overrides_from_json(argv[1])
    result = podracer.train(load_config("sebulba_cartpole_muzero", overrides))
    state = result.learner_state
    buffer = state.replay.value.buffer
    print(
        json.dumps(
            {
                "learn_calls": int(np.asarray(state.learn_calls)),
                "buffer_index": np.asarray(buffer.current_index).tolist(),
                "buffer_devices": sorted(d.id for d in buffer.current_index.devices()),
                "params_devices": sorted(d.id for d in jax.tree.leaves(state.params)[0].devices()),
                "losses": [record["loss"] for record in result.history],
                "policy_losses": [record["policy_loss"] for record in result.history],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv)
