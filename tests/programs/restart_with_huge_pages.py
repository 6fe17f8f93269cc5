"""Restarts itself as the `podracer` command does, then prints its arguments, tunables and how often it started.

`python -m tests.programs.restart_with_huge_pages ARGS...`; `RESTART_COUNT_FILE` names a file that gets one line
per start.
"""

import json
import os
import sys

from podracer.devices import host_memory

with open(os.environ["RESTART_COUNT_FILE"], "a") as starts:
    starts.write("started\n")
host_memory.restart_with_huge_pages()
print(
    json.dumps(
        {"args": sys.argv[1:], "tunables": os.environ.get(host_memory.TUNABLES_ENV), "jax": "jax" in sys.modules}
    )
)
