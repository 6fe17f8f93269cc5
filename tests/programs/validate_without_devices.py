"""Loads a config with overrides (JSON in argv[2]), validates it statically and reports whether JAX started a backend.

Prints `{"error": message or null, "backends_started": bool}`.
"""

import json
import sys

from jax._src import xla_bridge

import podracer

overrides = json.loads(sys.argv[2])
try:
    podracer.validate_config(podracer.load_config(sys.argv[1], overrides))
    error = None
except podracer.ConfigError as config_error:
    error = str(config_error)
print(json.dumps({"error": error, "backends_started": xla_bridge.backends_are_initialized()}))
