"""Test-session settings, applied before any test module imports JAX.

Every test process sees two CPU devices, so in-process tests exercise
replication too; tests that need more devices start a subprocess (see
`tests/helpers.py`). XLA reads the flag when JAX initialises its backends.

Compiled programs go to a persistent compilation cache private to this
session, which the subprocesses inherit: many tests build the same programs
(the same network's initialisation, the same learner step), and on a 2-core
machine compiling them again dominates the suite's time. Every program is
cached, however quickly it compiled: the subprocesses each compile the same
many small programs (initialisers, acting steps), and caching them all makes
the suite about 5% faster than caching only those that take half a second.
"""

import atexit
import os
import shutil
import tempfile

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _cache_dir = tempfile.mkdtemp(prefix="podracer-test-jax-cache-")
    atexit.register(shutil.rmtree, _cache_dir, ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _cache_dir
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
