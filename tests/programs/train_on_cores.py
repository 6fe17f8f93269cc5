"""Trains Catch briefly on the cores named in argv[1] and prints the final parameters' checksum and the last loss.

python -m tests.programs.train_on_cores 0,1
"""

import os
import sys

if __name__ == "__main__":
    os.sched_setaffinity(0, {int(core) for core in sys.argv[1].split(",")})  # Before JAX sizes its pool.

    import jax
    import numpy as np

    import podracer
    from tests.helpers import load_config

    result = podracer.train(load_config("anakin_catch", num_envs=64, total_steps=64 * 16 * 4))  # 4 updates.
    checksum = sum(float(np.abs(leaf).sum()) for leaf in jax.tree.leaves(result.learner_state.params))
    print(checksum, result.history[-1]["loss"])
