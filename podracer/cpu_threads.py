"""How many threads XLA:CPU may use, set once per process before JAX creates its CPU client.

XLA:CPU splits a kernel that looks big enough over a pool with one thread per
core. The kernels of small agents are not big enough: in CleanRL's CartPole PPO
a minibatch step is about a hundred kernels of a few microseconds each (a
128x64 by 64x64 product, a tanh over 8,192 numbers), and handing half of each
to another core costs more than it saves. On the 2-core CI machine one thread
runs that workload about a third faster than two. How a kernel is split also
changes float rounding, so a fixed thread count makes CPU results the same on
machines with different numbers of cores.

`config.cpu_threads` sets the size of the pools (PJRT reads the `PJRT_NPROC`
environment variable when it creates the CPU client); 0 keeps XLA's default,
one thread per core, which suits convolutional networks and Sebulba's actor and
learner devices sharing one CPU. The value only takes effect in a process that
has not used JAX yet, as under `podracer train`; `PJRT_NPROC` set by the user
always wins.
"""

import os
import warnings

from jax._src import xla_bridge

THREADS_ENV = "PJRT_NPROC"


def set_cpu_threads(threads: int) -> None:
    """Sizes XLA:CPU's thread pools to `threads` (0: one per core) if JAX has not started yet."""
    if threads == 0 or THREADS_ENV in os.environ:
        return
    if xla_bridge.backends_are_initialized():
        warnings.warn(
            f"config.cpu_threads={threads} has no effect: JAX was already running in this process "
            f"(set {THREADS_ENV}={threads} before starting Python instead)",
            stacklevel=2,
        )
        return
    os.environ[THREADS_ENV] = str(threads)
