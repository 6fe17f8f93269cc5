"""Every test process sees two CPU devices, so in-process tests exercise replication too.

XLA reads the flag when JAX initialises its backends, so it is set here, before
any test module imports JAX. Tests that need more devices start a subprocess
(see `tests/helpers.py`).
"""

import os

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
