"""Tests that run in a child session whose XLA:CPU compiles with its default optimisations, not the suite's quick ones.

The suite compiles with LLVM at -O0 and XLA:CPU's older loop emitters (`tests/conftest.py`): most tests are mostly
compiling, and the programs they check come out the same but for float rounding. A few claims hold only for the
programs XLA builds by default, the ones users run: that two programs built differently compute bitwise alike (a
population's member and its run alone, a meta-gradient at rate 0 and the plain run); and tests that mostly run,
not compile (AlphaZero's and MuZero's searches, MuJoCo's physics), run slower at -O0. A test of either is marked
`@pytest.mark.default_compile`; the worker then calls it in a fresh `pytest` of its own, whose session leaves out
the quick-compile flags, and takes that run's outcome, and the properties it recorded (a learning test's metrics),
as the test's.

What breaks the bitwise claims is XLA:CPU's older loop emitters, not LLVM's optimisation level: with XLA's own
fusion emitters at -O0 every one of them holds, and those tests mostly compile. They are marked
`@pytest.mark.default_compile(llvm_optimised=False)`, and their child compiles with LLVM at -O0: on the AVX2 host,
the seven took 136 test-seconds instead of 212, two workers side by side.
"""

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence

import pytest

MARKER = "default_compile"
# The compilation cache the children share (the session's own holds its quick-compiled programs): in the session, for
# its workers to hand on, and in a child, where its presence says that this is one.
CACHE_ENV = "PODRACER_TESTS_DEFAULT_COMPILE_CACHE"
CHILD_ENV = "PODRACER_TESTS_DEFAULT_COMPILE_CHILD_CACHE"
# Where a child writes the user properties its test recorded, for the parent to report.
PROPERTIES_ENV = "PODRACER_TESTS_DEFAULT_COMPILE_PROPERTIES"
# Set in a child whose test is marked `llvm_optimised=False`: it compiles with XLA's emitters and LLVM at -O0.
LLVM_UNOPTIMISED_ENV = "PODRACER_TESTS_DEFAULT_COMPILE_LLVM_UNOPTIMISED"
CHILD_CACHE = os.environ.get(CHILD_ENV)  # Read before the session's set-up removes PODRACER_* names.
PROPERTIES_FILE = os.environ.get(PROPERTIES_ENV)
IN_CHILD = CHILD_CACHE is not None
LLVM_UNOPTIMISED = IN_CHILD and os.environ.get(LLVM_UNOPTIMISED_ENV) == "1"
HANG_SECONDS = 1800.0  # A bound for a hang, far beyond what the marked tests take on a busy 2-core machine.


def run_in_child(item: pytest.Item, options: Sequence[str] = ()) -> bool | None:
    """Calls a marked test in a child session given `options` instead of in this process (its fixtures are set up
    and torn down here as for any test); None, to call it here, for any other item."""
    marker = None if IN_CHILD else item.get_closest_marker(MARKER)
    if marker is None:
        return None
    _child_session(item, options, llvm_optimised=marker.kwargs.get("llvm_optimised", True))
    return True


def cache_for_children(session_dir: str) -> dict[str, str]:
    """The environment entry that gives the children of a session set up in `session_dir` their shared cache."""
    folder = os.path.join(session_dir, "jax-compilation-cache-default-compile")
    os.makedirs(folder, exist_ok=True)
    return {CACHE_ENV: folder}


def save_properties(report: pytest.TestReport) -> None:
    """In a child, writes what its test's call recorded (`user_properties`) where the parent reads it."""
    if PROPERTIES_FILE and report.when == "call":
        with open(PROPERTIES_FILE, "w") as f:
            json.dump(report.user_properties, f)


def _child_session(item: pytest.Item, options: Sequence[str], llvm_optimised: bool) -> None:
    command = [sys.executable, "-m", "pytest", item.nodeid, "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *options]
    with tempfile.TemporaryDirectory() as folder:
        properties = os.path.join(folder, "properties.json")
        child = subprocess.run(
            command,
            cwd=str(item.config.rootpath),
            env={
                **os.environ,
                CHILD_ENV: os.environ[CACHE_ENV],
                PROPERTIES_ENV: properties,
                LLVM_UNOPTIMISED_ENV: "0" if llvm_optimised else "1",
            },
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=HANG_SECONDS,
        )
        if os.path.exists(properties):
            with open(properties) as f:
                item.user_properties.extend(tuple(pair) for pair in json.load(f))
    if child.returncode != 0:
        pytest.fail(f"in a session compiled with XLA's defaults:\n{child.stdout[-6000:]}\n{child.stderr[-3000:]}")
