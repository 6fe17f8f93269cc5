"""Shared test utilities: loading configs and running code under forced CPU devices."""

import os
import runpy
import subprocess
import sys
import textwrap
from typing import Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_config(name: str, **overrides):
    config = runpy.run_path(os.path.join(ROOT, "configs", f"{name}.py"))["get_config"]()
    for field, value in overrides.items():
        node = config
        *parents, leaf = field.split(".")
        for parent in parents:
            node = node[parent]
        node[leaf] = value
    return config


def run_python(
    code: str, num_devices: int = 1, timeout: float = 300, args=(), env: Optional[dict] = None
) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter that sees `num_devices` CPU devices.

    `env` adds environment variables; a value of None removes one.
    """
    env = {
        **os.environ,
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={num_devices}",
        "JAX_PLATFORMS": "cpu",
        **(env or {}),
    }
    env = {name: value for name, value in env.items() if value is not None}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )


def run_cli(*args: str, num_devices: int = 1, timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs `podracer ...` in a fresh interpreter that sees `num_devices` CPU devices."""
    return run_python("from podracer.cli import main; main()", num_devices, timeout, args=args)


def start_pod(code: str, processes: int, devices_per_process: int, args=()) -> list[subprocess.Popen]:
    """Starts `code` in `processes` local processes joined as one JAX job (see scripts/launch_local.py)."""
    launch_local = runpy.run_path(os.path.join(ROOT, "scripts", "launch_local.py"))
    address = f"127.0.0.1:{launch_local['free_port']()}"
    return [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code), *args],
            cwd=ROOT, env=launch_local["process_env"](index, devices_per_process, address),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for index in range(processes)
    ]
