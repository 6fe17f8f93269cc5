"""Test-session settings, applied before any test module imports JAX, and the fixtures every folder shares.

The session makes its own environment instead of trusting the launcher's (a
terminal, `nohup make test &`, a CI runner, a git hook): every test process
and every child it starts (`python -m tests.programs...`, `podracer` commands,
pods, notebook kernels, Gymnasium workers) sees the same settings however the
suite was started.

* JAX and XLA: two forced CPU devices and nothing else from the launcher. Its
  `JAX_*`, `XLA_*`, `PJRT_*`, `TPU_*`, accelerator and `TF_CPP_*` (XLA's log
  levels) settings would change the devices, the precision (`JAX_ENABLE_X64`),
  what is compiled (`JAX_DISABLE_JIT`) or what a child prints on stderr.
  Every test process sees two CPU devices, so in-process tests exercise
  replication too; tests that need more devices start a subprocess (see
  `tests/helpers.py`). XLA reads the flag when JAX initialises its backends.
  XLA:CPU also compiles quickly (`QUICK_COMPILE_FLAGS`) and, on x86, only
  AVX2 code (`PINNED_ISA`), so that every host computes the same floats.
  One XLA:CPU thread per process (`PJRT_NPROC=1`, what `config.cpu_threads=1`
  sets): the two xdist workers already keep both cores busy, and a pool of a
  thread per core in each worker and child oversubscribes them. Measured on
  the 2-core machine, interleaved: the slowest quarter of the suite ran 5-10%
  faster with one thread (246 s and 265 s against 272 s and 288 s). Tests of
  the thread setting itself give their children their own.
* Compiled programs go to a persistent compilation cache private to this
  session (never one the launcher names: another JAX's, or read-only), which
  the subprocesses inherit: many tests build the same programs (the same
  network's initialisation, the same learner step), and on a 2-core machine
  compiling them again dominates the suite's time. Every program is cached,
  however quickly it compiled: the subprocesses each compile the same many
  small programs (initialisers, acting steps), and caching them all makes the
  suite about 5% faster than caching only those that take half a second.
* Children import this checkout's `podracer` and `tests` first, whatever the
  launcher's `PYTHONPATH` or working directory, and none of the launcher's
  interpreter switches that would hide `tests` (`PYTHONSAFEPATH`), skip asserts
  (`PYTHONOPTIMIZE`) or add to a child's stderr (`PYTHONWARNINGS`, ...).
* No `PODRACER_*` (a pod's coordinator would make a run join a job), no
  `GLIBC_TUNABLES` (the `podracer` command sets its own, as for users), no git
  repository location (`GIT_DIR`..., set inside git hooks), no terminal size
  (`COLUMNS`, `LINES`: a child's output is a pipe), and matplotlib draws with
  Agg and its default settings (a config folder of this session's own, not the
  user's matplotlibrc).

The xdist workers are children of the process that set this up and inherit it.
"""

import atexit
import os
import re
import shutil
import signal
import tempfile

import pytest

from tests import default_compile, host
from tests import learning as learning_tests  # None of the three imports JAX.

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SESSION_ENV = "PODRACER_TESTS_SESSION"  # The pid of the process that set up this session's environment.

# What a launcher's environment may hold that changes what JAX, XLA, podracer, matplotlib, git or a child Python does.
LAUNCHER_PREFIXES = ("JAX_", "XLA_", "PJRT_", "TPU_", "TF_CPP_", "CUDA_", "NVIDIA_", "ROCR_", "HIP_")
LAUNCHER_PREFIXES += ("PODRACER_", "MPL")
LAUNCHER_NAMES = {"LIBTPU_INIT_ARGS", "GLIBC_TUNABLES", "MATPLOTLIBRC", "COLUMNS", "LINES"}
LAUNCHER_NAMES |= {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR"}
LAUNCHER_NAMES |= {"GIT_PREFIX", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES"}
LAUNCHER_NAMES |= {"PYTHONSAFEPATH", "PYTHONOPTIMIZE", "PYTHONWARNINGS", "PYTHONDEVMODE", "PYTHONVERBOSE"}
LAUNCHER_NAMES |= {"PYTHONINSPECT", "PYTHONBREAKPOINT"}


SESSION_XLA_FLAGS = ["--xla_force_host_platform_device_count=2", "--xla_llvm_disable_expensive_passes=true"]
# Compiling is most of what the tests do (80% of the suite's time, measured with JAX's compile events), so the session
# compiles quickly: LLVM at -O0 and XLA:CPU's older loop emitters. On the AVX2 host, interleaved: the tests not marked
# slow 351 s -> 207 s, the slow ones 3,705 -> 3,029 test-seconds (those that mostly run, not compile, slower: MuZero's
# Sebulba test 97 -> 192 s). What changes is float rounding, as another seed would: the learning tests' thresholds hold
# for any seed (docs/testing.md). The few claims that hold only for XLA's own emitters, bitwise equality of two
# programs built differently, run in a child session without the older emitters, at -O0 (`tests/default_compile.py`).
LLVM_UNOPTIMISED_FLAGS = ["--xla_backend_optimization_level=0"]
OLDER_EMITTER_FLAGS = ["--xla_cpu_use_fusion_emitters=false"]
QUICK_COMPILE_FLAGS = [*LLVM_UNOPTIMISED_FLAGS, *OLDER_EMITTER_FLAGS]
if not default_compile.IN_CHILD:
    SESSION_XLA_FLAGS += QUICK_COMPILE_FLAGS
elif default_compile.LLVM_UNOPTIMISED:
    SESSION_XLA_FLAGS += LLVM_UNOPTIMISED_FLAGS
# On x86, XLA:CPU's code is limited to AVX2, the widest ISA every host of the CI machine has: its AVX-512 code rounds
# differently, so without the limit a run's floats, and so its learning curve, would depend on which host ran it.
PINNED_ISA = "AVX2"
if host.is_x86():
    SESSION_XLA_FLAGS.append(f"--xla_cpu_max_isa={PINNED_ISA}")


def _session_environment(environ) -> None:
    """Replaces, in `environ`, what the launcher set that would change a test's verdict with this session's settings."""
    for name in list(environ):
        if name.startswith(LAUNCHER_PREFIXES) or name in LAUNCHER_NAMES:
            del environ[name]
    session_dir = tempfile.mkdtemp(prefix="podracer-tests-")
    atexit.register(shutil.rmtree, session_dir, ignore_errors=True)
    cache, matplotlib = os.path.join(session_dir, "jax-compilation-cache"), os.path.join(session_dir, "matplotlib")
    for folder in (cache, matplotlib):
        os.makedirs(folder)
    environ.update(
        XLA_FLAGS=" ".join(SESSION_XLA_FLAGS),
        JAX_PLATFORMS="cpu",
        PJRT_NPROC="1",
        JAX_COMPILATION_CACHE_DIR=default_compile.CHILD_CACHE or cache,
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        MPLBACKEND="Agg",
        MPLCONFIGDIR=matplotlib,
        PYTHONPATH=os.pathsep.join([ROOT, *filter(None, [environ.get("PYTHONPATH")])]),
    )
    environ[SESSION_ENV] = str(os.getpid())
    if not default_compile.IN_CHILD:
        environ.update(default_compile.cache_for_children(session_dir))


# Not an xdist worker of the process that set it up (a child session's parent may be the session's only process).
if default_compile.IN_CHILD or os.environ.get(SESSION_ENV) != str(os.getppid()):
    _session_environment(os.environ)


@pytest.fixture
def ctrl_c_raises_keyboard_interrupt():
    """During the test, SIGINT raises KeyboardInterrupt in this process, as in a terminal; then as before.

    A process started with SIGINT ignored (a background job: `make test &`, a
    CI runner) keeps it ignored, and Python then installs no handler of its own.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True)
def _process_state_restored():
    """Undoes what a test, or podracer code it runs in this process, changed of the process's environment
    variables, working directory and SIGINT and SIGTERM handling, so that no later test depends on the order.

    The first `podracer.train` in a process sets `PJRT_NPROC` (`config.cpu_threads`), say, which every child of
    every later test would otherwise inherit.
    """
    environ, cwd = dict(os.environ), os.getcwd()
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    yield
    for name in set(os.environ) - set(environ):
        del os.environ[name]
    for name, value in environ.items():
        if os.environ.get(name) != value:
            os.environ[name] = value
    if os.getcwd() != cwd:
        os.chdir(cwd)
    for number, handler in handlers.items():
        if handler is not None and signal.getsignal(number) is not handler:
            signal.signal(number, handler)


@pytest.fixture(autouse=True)
def _registries_restored():
    """Undoes the environment and agent names a test registered, so that no later test in the same worker sees them
    (the check that every registered environment has a conformance test, say)."""
    from podracer.agents import registry as agents  # Here, not above: podracer imports JAX, after the settings above.
    from podracer.envs import env_registry as envs

    registries = (envs._JAX, envs._HOST, agents._AGENTS)
    saved = [dict(registry) for registry in registries]
    yield
    for registry, entries in zip(registries, saved, strict=True):
        registry.clear()
        registry.update(entries)


@pytest.fixture(autouse=True)
def _children_end_with_their_test():
    """Kills the children a test started through `tests.helpers.start` and left running (a failed assertion, say)."""
    from tests import helpers  # Here, not above: importing helpers imports JAX, after the settings above.

    yield
    helpers.end_children()


# A test file whose every test is slow says so once, at the top: `pytestmark = pytest.mark.slow`.
WHOLLY_SLOW = re.compile(r"^pytestmark = pytest\.mark\.slow\b", re.MULTILINE)


def pytest_ignore_collect(collection_path, config: pytest.Config) -> bool | None:
    """With the slow tests deselected (`-m "not slow"`: `make test-fast`), a file marked slow as a whole is not even
    imported: its suite's import (brax, JaxMARL, navix, Playground...) would cost each worker seconds for nothing."""
    if config.getoption("markexpr") == "not slow" and collection_path.name.startswith("test_"):
        if collection_path.suffix == ".py" and WHOLLY_SLOW.search(collection_path.read_text()):
            return True
    return None


def pytest_collection_modifyitems(items: list) -> None:
    """Runs the slow tests first (otherwise in the order collected), so that the workers, handed one test at a time
    (`--maxschedchunk 1`, the Makefile's `XDIST`), share them from the start and finish together on short tests,
    instead of one worker ending the suite alone in a long test.

    A test marked `extended` (left to `make test-extended`) must be marked slow too, so that `make test-fast`, which
    deselects the slow tests alone, leaves it out as `make test` does."""
    for item in items:
        if item.get_closest_marker("extended") and not item.get_closest_marker("slow"):
            raise pytest.UsageError(f"{item.nodeid} is marked extended but not slow: mark it slow too")
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_report_header(config: pytest.Config) -> str:
    """The host's CPU and ISA at the top of the session's output, and the ISA its XLA:CPU code is limited to."""
    pinned = f"; XLA:CPU code limited to {PINNED_ISA}" if host.is_x86() else ""
    return f"host: {host.describe()}{pinned}"


def pytest_addoption(parser: pytest.Parser) -> None:
    learning_tests.add_option(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    return default_compile.run_in_child(pyfuncitem, learning_tests.child_options(pyfuncitem.config))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    default_compile.save_properties(report)


def pytest_collection_finish(session: pytest.Session) -> None:
    learning_tests.print_declared(session)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    learning_tests.parametrize(metafunc)


def pytest_terminal_summary(terminalreporter) -> None:
    learning_tests.report(terminalreporter)


@pytest.fixture
def learning_seed() -> int:
    """The seed a learning test trains with: `--learning-seeds` parametrizes it, otherwise the suite's one seed."""
    return learning_tests.DEFAULT_SEED


@pytest.fixture
def learning(request, learning_seed) -> learning_tests.Learning:
    """A learning test's seed and the check of the thresholds its `learning` markers declare (`tests/learning.py`)."""
    return learning_tests.Learning(request.node, learning_seed)
