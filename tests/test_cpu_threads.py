"""`config.cpu_threads` sizes XLA:CPU's thread pool, and only where it can."""

import os
from typing import Optional

import pytest

from tests.helpers import run_python

# Prints how many XLA:CPU pool threads ("tf_XLAEigen") the process runs once JAX has started.
COUNT_POOL_THREADS = """
import os, sys, warnings
warnings.simplefilter("error")
import jax
from podracer.cpu_threads import set_cpu_threads
if sys.argv[2] == "after":
    jax.numpy.zeros(1).block_until_ready()
try:
    set_cpu_threads(int(sys.argv[1]))
except UserWarning as warning:
    print("warning:", warning)
jax.numpy.zeros(1).block_until_ready()
names = [open(f"/proc/self/task/{task}/comm").read().strip() for task in os.listdir("/proc/self/task")]
print("pool threads:", names.count("tf_XLAEigen"))
"""


def _pool_threads(threads: int, when: str = "before", user_setting: Optional[str] = None) -> str:
    result = run_python(COUNT_POOL_THREADS, args=(str(threads), when), env={"PJRT_NPROC": user_setting})
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_cpu_threads_sizes_the_pool_before_jax_starts():
    assert "pool threads: 3" in _pool_threads(3)
    assert "pool threads: 1" in _pool_threads(1)


def test_zero_keeps_one_thread_per_core():
    assert f"pool threads: {len(os.sched_getaffinity(0))}" in _pool_threads(0)


def test_the_users_environment_wins():
    assert "pool threads: 2" in _pool_threads(1, user_setting="2")


def test_too_late_is_a_warning_not_a_silent_no_op():
    output = _pool_threads(3, when="after")
    assert "warning: config.cpu_threads=3 has no effect" in output
    assert f"pool threads: {len(os.sched_getaffinity(0))}" in output


# Trains Catch briefly on the cores named in argv[1] and prints the final parameters' checksum and losses.
TRAIN_ON_CORES = """
import os, sys
os.sched_setaffinity(0, {int(core) for core in sys.argv[1].split(",")})  # Before JAX sizes its pool.
import jax, numpy as np
from podracer.anakin import train
from tests.helpers import load_config
state, history = train(load_config("anakin_catch", total_steps=20_480), show_progress=False)
print(sum(float(np.abs(leaf).sum()) for leaf in jax.tree.leaves(state.learner.params)), history[-1]["loss"])
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_one_thread_gives_the_same_parameters_on_one_core_and_on_two():
    outputs = []
    for cores in ("0", ",".join(str(core) for core in sorted(os.sched_getaffinity(0)))):
        result = run_python(TRAIN_ON_CORES, args=(cores,), env={"PJRT_NPROC": None})
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
