"""Shared test utilities: loading configs, and running programs under forced CPU devices in fresh interpreters.

Programs that a test runs in its own interpreter (to choose how many CPU
devices JAX sees, to start JAX with particular settings, or to join a pod of
processes) are modules under `tests/programs/`, run as
`python -m tests.programs.NAME ARGS...` from the repository root. A test runs
one to its end with `run_module` (`run_cli` for the `podracer` command), or
starts one it will signal, kill or watch with `start_program` (`start_cli`,
`start`, `start_pod`): such a child takes SIGINT and SIGTERM as in a terminal
however the suite was launched, and never outlives its test.

Every wait has a bound, `HANG_SECONDS`, far beyond what a busy 2-core machine
needs: reaching it means something hung, never that the host was slow.
"""

import json
import os
import signal
import subprocess
import sys
import sysconfig
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
import pytest

from podracer.config import loading
from podracer.devices import local_pod
from podracer.devices.xla_cpu import child_environment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HANG_SECONDS = 600.0
"""How long a test waits for a child or a condition before it calls it hung (not a bound on how long anything takes)."""


# Fields whose bound a slow host could reach, changing what a run does: Anakin shortens a dispatch slower than
# max_dispatch_seconds (so more records), a Sebulba run abandons a learner that takes longer than stop_grace_seconds
# to stop, and fails one whose threads wait longer than stall_timeout_seconds. Tests set them to HANG_SECONDS.
TIMING_FIELDS = {"anakin": ("max_dispatch_seconds",), "sebulba": ("stop_grace_seconds", "stall_timeout_seconds")}

SESSION_PREFIXES = ("JAX_", "XLA_", "PJRT_", "PODRACER_")  # What the session sets (`tests/conftest.py`).

# configs/anakin_lpg_gridworlds.py's meta-training made tiny, as overrides: one family of 2 members (one per device of
# the session's two), lifetimes that end mid-run, small networks; a test adds `meta.updates`.
TINY_META_TRAINING = {
    "meta.environments": '(("lpg_delayed_chain", {"variant": "short"}, 2),)',
    "meta.envs_per_member": 2,
    "meta.inner_updates": 2,
    "meta.lifetime": "(4, 6)",
    "meta.updates_per_dispatch": 2,
    "meta.hidden_size": 8,
    "meta.embedding_size": 4,
    "agent.prediction_size": 4,
    "network.hidden_sizes": "(8,)",
    "unroll_length": 4,
}


def load_config(name: str, overrides: Mapping[str, Any] | None = None, /, **fields: Any):
    """`configs/NAME.py` (or NAME itself, a `.py` path from the repository's root) with overrides of dotted fields, as
    `podracer.config.loading.load` applies them (then locked).

    Overrides come as a dict (`load_config("x", {"agent.gamma": 0.9})`) or as
    keywords for top-level fields (`load_config("x", num_envs=8)`), or both.
    The `TIMING_FIELDS` are `HANG_SECONDS` unless overridden, so that no
    test's run depends on how busy the host is.
    """
    overrides = {**(overrides or {}), **fields}
    path = os.path.join(ROOT, name) if name.endswith(".py") else os.path.join(ROOT, "configs", f"{name}.py")
    config = loading.load(path, overrides)
    for field in TIMING_FIELDS[config.architecture]:
        if field not in overrides:
            config[field] = HANG_SECONDS
    return config


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


def users_environment() -> dict:
    """This process's environment as a user's shell has it: none of the session's JAX, XLA, PJRT and own settings (its
    forced CPU devices, compile flags, limit on the ISA, thread count, compilation cache) and not its `PYTHONPATH`
    (the `podracer` command is installed in the environment). The session removed
    the launcher's own (`tests/conftest.py`), so none of the user's are left either.

    A child started in it sees what `make run` and the `podracer` commands see: the CPU devices its config makes
    (`cpu_devices`: by default one per core for Anakin), all of the host's vector instructions, every core's thread.
    """
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(SESSION_PREFIXES) and name != "PYTHONPATH"
    }


def subprocess_env(num_devices: int = 1, env: Mapping[str, str | None] | None = None) -> dict:
    """This process's environment for a child that sees `num_devices` CPU devices; `env` adds (None removes) names.

    The child keeps the session's other XLA flags (`tests/conftest.py`): JAX keys its persistent compilation cache
    by `XLA_FLAGS` as well as by the program, so a child with the session's two devices and flags reuses what the
    tests compiled in process, and they what it compiled (the docs' examples are the tests' own runs).
    """
    merged = {**child_environment(devices=num_devices), "JAX_PLATFORMS": "cpu", **(env or {})}
    return {name: value for name, value in merged.items() if value is not None}


def run_module(
    name: str,
    *args: str,
    num_devices: int = 1,
    timeout: float = HANG_SECONDS,
    env: Mapping[str, str | None] | None = None,
) -> subprocess.CompletedProcess:
    """Runs `python -m tests.programs.NAME ARGS...` in a fresh interpreter that sees `num_devices` CPU devices.

    `env` adds environment variables; a value of None removes one.
    """
    return _run_python_module(f"tests.programs.{name}", args, num_devices, timeout, env)


def run_cli(
    *args: str, num_devices: int = 1, timeout: float = HANG_SECONDS, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess:
    """Runs `podracer ARGS...` in a fresh interpreter that sees `num_devices` CPU devices (`env` as `run_module`'s)."""
    return _run_python_module("podracer.cli", args, num_devices, timeout, env)


def run_as_user(*command: str, cwd: str = ROOT, timeout: float = HANG_SECONDS) -> subprocess.CompletedProcess:
    """Runs `command` (`podracer ...` is this environment's own command) in `users_environment()`, from `cwd`."""
    if command[0] == "podracer":
        command = (os.path.join(os.path.dirname(sys.executable), "podracer"), *command[1:])
    return run(command, env=users_environment(), cwd=cwd, timeout=timeout)


def last_json_line(stdout: str) -> Any:
    """What a program printed last, as JSON (programs end by printing their summary)."""
    return json.loads(stdout.strip().splitlines()[-1])


def overrides_from_json(text: str) -> dict:
    """Config overrides a program got as JSON on its command line; JSON lists are read as tuples."""
    return {field: tuple(value) if isinstance(value, list) else value for field, value in json.loads(text).items()}


def pause_at_records(seconds: float, hold_from: int | None = None) -> Callable:
    """A `podracer.train` callback for a run a test kills: it sleeps `seconds` at every log record, timing only.

    From this process's `hold_from`-th record on it waits until the process is
    killed (`HANG_SECONDS` at the most), so that the run cannot finish before
    the test kills it, however slow the test's own process.
    """
    records = 0

    def pause(event) -> None:
        nonlocal records
        records += 1
        time.sleep(HANG_SECONDS if hold_from is not None and records >= hold_from else seconds)

    return pause


_children: list[tuple[subprocess.Popen, bool]] = []  # Every child `start` started, and whether it leads a group.


def _default_signals() -> None:
    """Run in the child before it executes its program: SIGINT and SIGTERM at their defaults, and not blocked.

    It only sets signal dispositions and the signal mask (sigaction,
    sigprocmask): nothing that could wait on a lock another thread of this
    process held when it forked.
    """
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def start(
    command: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str = ROOT, new_session: bool = False
) -> subprocess.Popen:
    """Starts `command` as a child the test may signal; stdin is empty, stdout and stderr are piped (text).

    The child takes SIGINT and SIGTERM at their defaults whatever this process
    does: a child inherits the signals its parent ignores, and a background
    job (`make test &`, a CI runner, a job scheduler) starts with SIGINT
    ignored, so the test's SIGINT would never reach the child's handlers (a
    Python child installs no KeyboardInterrupt handler then, and bash cannot
    trap it). `new_session`: the child leads a session and process group of
    its own, which the test signals as a terminal does (`os.killpg`). A child
    (or its group) still running when the test ends is killed.
    """
    with warnings.catch_warnings():  # JAX warns of any fork; this child only resets signals before its exec.
        warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=new_session,
            preexec_fn=_default_signals,
        )
    _children.append((process, new_session))
    return process


def start_program(
    name: str, *args: str, num_devices: int = 1, env: Mapping[str, str | None] | None = None
) -> subprocess.Popen:
    """`start`s `python -m tests.programs.NAME ARGS...` in a fresh interpreter that sees `num_devices` CPU devices."""
    return _start_python_module(f"tests.programs.{name}", args, num_devices, env)


def start_cli(*args: str, num_devices: int = 1, env: Mapping[str, str | None] | None = None) -> subprocess.Popen:
    """`start`s `podracer ARGS...` in a fresh interpreter that sees `num_devices` CPU devices."""
    return _start_python_module("podracer.cli", args, num_devices, env)


def start_pod(
    name: str, processes: int, devices_per_process: int, args=(), env: Mapping[str, str] | None = None
) -> list[subprocess.Popen]:
    """`start`s `tests.programs.NAME` in `processes` local processes joined as one JAX job (`devices.local_pod`).

    `env` adds environment variables to every process's.
    """
    address = f"127.0.0.1:{local_pod.free_port()}"
    return [
        start(
            [sys.executable, "-m", f"tests.programs.{name}", *args],
            env={**local_pod.process_env(index, devices_per_process, address), **(env or {})},
        )
        for index in range(processes)
    ]


def finish(processes: Sequence[subprocess.Popen]) -> list[tuple[str, str]]:
    """Every process's (stdout, stderr) once it has exited, which it must with status 0."""
    outputs = [process.communicate(timeout=HANG_SECONDS) for process in processes]
    for process, (_, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stderr[-3000:]
    return outputs


def wait_until(
    condition: Callable[[], bool], what: str, processes: Sequence[subprocess.Popen] = (), timeout: float = HANG_SECONDS
) -> None:
    """Returns once `condition()` holds; fails the test if one of `processes` ends first, or after `timeout` seconds.

    `what` says what was awaited, for the failure's message (with the ended process's stderr).
    """
    deadline = time.monotonic() + timeout
    while not condition():
        for process in processes:
            if process.poll() is not None:
                stderr = process.communicate(timeout=HANG_SECONDS)[1]
                pytest.fail(f"waiting for {what}: a process exited with status {process.returncode}\n{stderr[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"waiting for {what}: nothing within {timeout:g} s")
        time.sleep(0.02)


def end_children() -> None:
    """Kills the children `start` started that still run, with what remains of the groups they lead, and reaps them."""
    while _children:
        process, leads_group = _children.pop()
        try:
            if leads_group:  # Its group may outlive it (a background job of a script).
                os.killpg(process.pid, signal.SIGKILL)
            elif process.poll() is None:
                process.kill()
        except ProcessLookupError:
            pass
        process.communicate(timeout=HANG_SECONDS)


def run(
    command: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str = ROOT, timeout: float = HANG_SECONDS
) -> subprocess.CompletedProcess:
    """Runs `command` to its end (`timeout` is for a hang): stdin empty, stdout and stderr captured as text."""
    return subprocess.run(
        list(command),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _run_python_module(module: str, args, num_devices: int, timeout: float, env) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", module, *args], env=subprocess_env(num_devices, env), timeout=timeout)


def _start_python_module(module: str, args, num_devices: int, env) -> subprocess.Popen:
    return start([sys.executable, "-m", module, *args], env=subprocess_env(num_devices, env))


def play_without_podracer(folder: str, as_user: bool = False) -> dict:
    """Runs tests/programs/play_exported.py by its path, with `-S` and only site-packages on its path, from `folder`:
    there `import podracer` fails (checked), as where podracer is not installed. Its programs compile with the
    session's XLA flags, as the test's own do, so that their actions can be compared bitwise; `as_user`: with none."""
    paths = sysconfig.get_paths()
    env = {"PYTHONPATH": os.pathsep.join(dict.fromkeys([paths["purelib"], paths["platlib"]])), "JAX_PLATFORMS": "cpu"}
    kept = ("PATH", "HOME", "TMPDIR") if as_user else ("PATH", "HOME", "TMPDIR", "XLA_FLAGS")
    env.update({name: os.environ[name] for name in kept if name in os.environ})
    probe = subprocess.run([sys.executable, "-S", "-c", "import podracer"], cwd=folder, env=env, capture_output=True)
    assert probe.returncode == 1 and b"No module named 'podracer'" in probe.stderr, probe.stderr
    script = os.path.join(ROOT, "tests", "programs", "play_exported.py")
    done = subprocess.run(
        [sys.executable, "-S", script, folder],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_SECONDS,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def save_random_rule(path: str, prediction_size: int = 30) -> str:
    """Saves a small random LPG rule (`agents.meta.rule_checkpoint`) into the folder `path`, and returns `path`."""
    from podracer.agents.meta import lpg_rule, rule_checkpoint

    settings = lpg_rule.RuleSettings(hidden_size=8, prediction_size=prediction_size, embedding_size=4)
    rule_checkpoint.save_rule(path, lpg_rule.init_rule(jax.random.key(0), settings), settings)
    return path
