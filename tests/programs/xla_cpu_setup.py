"""Prints how many XLA:CPU pool threads ("tf_XLAEigen") and CPU devices the process has once JAX has started.

    python -m tests.programs.xla_cpu_setup threads|devices N before|after

Calls `set_cpu_threads(N)` or `set_cpu_devices(N)` before JAX starts its CPU
client, or after ("after"), when it can only warn; the warning is printed, not
raised.
"""

import os
import sys
import warnings

import jax

from podracer.devices.xla_cpu import set_cpu_devices, set_cpu_threads

if __name__ == "__main__":
    warnings.simplefilter("error")
    setting, value, when = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if when == "after":
        jax.numpy.zeros(1).block_until_ready()
    try:
        {"threads": set_cpu_threads, "devices": set_cpu_devices}[setting](value)
    except UserWarning as warning:
        print("warning:", warning)
    jax.numpy.zeros(1).block_until_ready()
    names = [open(f"/proc/self/task/{task}/comm").read().strip() for task in os.listdir("/proc/self/task")]
    print("pool threads:", names.count("tf_XLAEigen"))
    print("devices:", jax.device_count("cpu"))
