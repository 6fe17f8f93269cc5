"""Shared test utilities: loading configs, and running programs under forced CPU devices in fresh interpreters.

Programs that a test runs in its own interpreter (to choose how many CPU
devices JAX sees, to start JAX with particular settings, or to join a pod of
processes) are modules under `tests/programs/`, run as
`python -m tests.programs.NAME ARGS...` from the repository root.
"""

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

from podracer.config import loading
from podracer.runtime import local_pod

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_config(name: str, overrides: Mapping[str, Any] | None = None, /, **fields: Any):
    """`configs/NAME.py` with overrides of dotted fields, as `podracer.config.loading.load` applies them (then locked).

    Overrides come as a dict (`load_config("x", {"agent.gamma": 0.9})`) or as
    keywords for top-level fields (`load_config("x", num_envs=8)`), or both.
    """
    return loading.load(os.path.join(ROOT, "configs", f"{name}.py"), {**(overrides or {}), **fields})


def small_sebulba_cartpole(**overrides: Any):
    """A few quick Sebulba IMPALA updates on envpool CartPole: 3 updates of 2 actor threads x 6 environments x 8 steps."""
    fields = dict(envs_per_thread=6, unroll_length=8, total_steps=8 * 6 * 2 * 3, log_every_updates=1)
    fields.update(overrides)
    return load_config("sebulba_cartpole_impala", fields)


def replicas_identical(tree: Any) -> bool:
    """Whether every device's copy of every leaf of a replicated pytree of arrays is bitwise the same."""
    for leaf in jax.tree.leaves(tree):
        copies = [np.asarray(shard.data) for shard in leaf.addressable_shards]
        if not all(np.array_equal(copies[0], copy) for copy in copies[1:]):
            return False
    return True


def subprocess_env(num_devices: int = 1, env: Mapping[str, str | None] | None = None) -> dict:
    """This process's environment for a child that sees `num_devices` CPU devices; `env` adds (None removes) names."""
    merged = {
        **os.environ,
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={num_devices}",
        "JAX_PLATFORMS": "cpu",
        **(env or {}),
    }
    return {name: value for name, value in merged.items() if value is not None}


def run_module(
    name: str,
    *args: str,
    num_devices: int = 1,
    timeout: float = 300,
    env: Mapping[str, str | None] | None = None,
) -> subprocess.CompletedProcess:
    """Runs `python -m tests.programs.NAME ARGS...` in a fresh interpreter that sees `num_devices` CPU devices.

    `env` adds environment variables; a value of None removes one.
    """
    return _run_python_module(f"tests.programs.{name}", args, num_devices, timeout, env)


def run_cli(
    *args: str, num_devices: int = 1, timeout: float = 300, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess:
    """Runs `podracer ARGS...` in a fresh interpreter that sees `num_devices` CPU devices (`env` as `run_module`'s)."""
    return _run_python_module("podracer.cli", args, num_devices, timeout, env)


def last_json_line(stdout: str) -> Any:
    """What a program printed last, as JSON (programs end by printing their summary)."""
    return json.loads(stdout.strip().splitlines()[-1])


def start_pod(
    name: str, processes: int, devices_per_process: int, args=(), env: Mapping[str, str] | None = None
) -> list[subprocess.Popen]:
    """Starts `tests.programs.NAME` in `processes` local processes joined as one JAX job (see `podracer.runtime.local_pod`).

    `env` adds environment variables to every process's.
    """
    address = f"127.0.0.1:{local_pod.free_port()}"
    return [
        subprocess.Popen(
            [sys.executable, "-m", f"tests.programs.{name}", *args],
            cwd=ROOT,
            env={**local_pod.process_env(index, devices_per_process, address), **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for index in range(processes)
    ]


def _run_python_module(module: str, args, num_devices: int, timeout: float, env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=subprocess_env(num_devices, env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
