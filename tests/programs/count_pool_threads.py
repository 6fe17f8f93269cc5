"""Prints how many XLA:CPU pool threads ("tf_XLAEigen") the process runs once JAX has started.

    python -m tests.programs.count_pool_threads THREADS before|after

Calls `set_cpu_threads(THREADS)` before JAX starts its CPU client, or after
("after"), when it can only warn; the warning is printed, not raised.
"""

import os
import sys
import warnings

import jax

from podracer.cpu_threads import set_cpu_threads

if __name__ == "__main__":
    warnings.simplefilter("error")
    threads, when = int(sys.argv[1]), sys.argv[2]
    if when == "after":
        jax.numpy.zeros(1).block_until_ready()
    try:
        set_cpu_threads(threads)
    except UserWarning as warning:
        print("warning:", warning)
    jax.numpy.zeros(1).block_until_ready()
    names = [open(f"/proc/self/task/{task}/comm").read().strip() for task in os.listdir("/proc/self/task")]
    print("pool threads:", names.count("tf_XLAEigen"))
