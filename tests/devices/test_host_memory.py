"""The `podracer` command's restart with glibc's huge-page tunable (`podracer.devices.host_memory`)."""

import pytest

from podracer.devices import host_memory
from tests.helpers import last_json_line, run_module


def test_glibc_gets_the_huge_page_tunable_added():
    environ = {"PATH": "/bin", "XLA_FLAGS": "--x"}
    assert host_memory.environment_with_huge_pages(environ, "glibc") == {
        **environ,
        "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1",
    }
    assert environ == {"PATH": "/bin", "XLA_FLAGS": "--x"}  # Unchanged: the restart gets a new mapping.


@pytest.mark.parametrize(
    "environ, libc",
    [
        ({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}, "glibc"),  # The user's own tunables win,
        ({"GLIBC_TUNABLES": ""}, "glibc"),  # even empty ones;
        ({}, ""),  # and without glibc (musl, macOS) there is nothing to set.
    ],
)
def test_nothing_changes_where_the_user_chose_or_there_is_no_glibc(environ, libc):
    assert host_memory.environment_with_huge_pages(environ, libc) is None


def test_a_process_restarts_once_with_its_arguments_and_huge_pages(tmp_path):
    starts = tmp_path / "starts"
    env = {host_memory.TUNABLES_ENV: None, "RESTART_COUNT_FILE": str(starts)}
    result = run_module("restart_with_huge_pages", "train", "--config.x=1 2", env=env)
    assert result.returncode == 0, result.stderr
    assert last_json_line(result.stdout) == {
        "args": ["train", "--config.x=1 2"],
        "tunables": host_memory.HUGE_PAGES,
        "jax": False,  # Importing `podracer` itself does not start JAX: the restart is cheap.
    }
    assert starts.read_text().splitlines() == ["started", "started"]
    # Where GLIBC_TUNABLES is set already, it starts once and keeps them.
    starts.unlink()
    result = run_module("restart_with_huge_pages", env={**env, host_memory.TUNABLES_ENV: "glibc.malloc.hugetlb=0"})
    assert last_json_line(result.stdout)["tunables"] == "glibc.malloc.hugetlb=0"
    assert starts.read_text().splitlines() == ["started"]
