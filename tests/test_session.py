"""The test session's own rules (`tests/conftest.py`): which files `make test-fast` leaves unimported, and how each
kind of session compiles (`tests/default_compile.py`)."""

import os
import pathlib

import pytest

from tests import conftest

TESTS = pathlib.Path(conftest.ROOT) / "tests"


class MarkExpression:
    """The one option `pytest_ignore_collect` reads: pytest's `-m` expression."""

    def __init__(self, expression: str):
        self.expression = expression

    def getoption(self, name: str) -> str:
        assert name == "markexpr", name
        return self.expression


def left_unimported(expression: str) -> set[str]:
    files = TESTS.rglob("*.py")
    return {
        path.relative_to(TESTS).as_posix()
        for path in files
        if conftest.pytest_ignore_collect(path, MarkExpression(expression))
    }


def test_only_files_marked_slow_as_a_whole_are_left_unimported_and_only_without_the_slow_tests():
    skipped = left_unimported("not slow")
    # The suites whose import alone costs each worker seconds.
    assert {
        "envs/suites/test_brax_env.py",
        "envs/suites/test_jaxmarl_env.py",
        "envs/suites/test_stoa_suites.py",
    } <= skipped
    # Files that hold slow tests beside fast ones, and the session's helpers, are imported.
    assert not skipped & {"anakin/test_train.py", "test_docs.py", "conftest.py", "helpers.py"}
    for path in skipped:
        assert "\npytestmark = pytest.mark.slow" in (TESTS / path).read_text(), path
    for expression in ("", "slow", "learning", "not learning"):
        assert left_unimported(expression) == set(), expression


def xla_flags() -> set[str]:
    return set(os.environ["XLA_FLAGS"].split())


def test_the_session_compiles_quickly_with_the_older_emitters_at_llvm_o0():
    assert set(conftest.QUICK_COMPILE_FLAGS) <= xla_flags()


@pytest.mark.slow  # A child pytest of its own: about 3 s, left to `make test`.
@pytest.mark.default_compile
def test_a_default_compile_child_builds_what_users_run():
    assert not set(conftest.QUICK_COMPILE_FLAGS) & xla_flags()


@pytest.mark.slow  # A child pytest of its own: about 3 s, left to `make test`.
@pytest.mark.default_compile(llvm_optimised=False)
def test_a_child_for_bitwise_claims_keeps_llvm_at_o0_with_xlas_own_emitters():
    flags = xla_flags()
    assert set(conftest.LLVM_UNOPTIMISED_FLAGS) <= flags
    assert not set(conftest.OLDER_EMITTER_FLAGS) & flags
