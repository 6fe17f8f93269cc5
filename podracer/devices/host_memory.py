"""Huge pages for XLA:CPU's big buffers: the `podracer` command restarts itself once with glibc's tunable set.

XLA:CPU allocates a program's buffers afresh at every execution, and glibc's
malloc serves any allocation above 32 MB with a fresh `mmap`, so every
execution of a program with big buffers first touches new pages, one page
fault per 4 KB. The Sebulba learner over Atari frames converts 1,344 frames of
84x84x4 bytes to float32 per update (152 MB): about 37,000 page faults per
update, more time than its matrix products take. With `glibc.malloc.hugetlb=1`
glibc asks the kernel for transparent huge pages (2 MB) on such mappings:
measured on the 2-core CI machine, one core, that update takes 60-72 ms of CPU
instead of 111-118 ms; small programs (Anakin on Catch) are unchanged.

glibc reads its tunables only when a process starts, so `podracer` (the
command line, and the processes it launches, which inherit its environment)
re-executes itself once with `GLIBC_TUNABLES` set, before anything is
imported. Elsewhere (a notebook, your own script), set
`GLIBC_TUNABLES=glibc.malloc.hugetlb=1` before starting Python. A
`GLIBC_TUNABLES` already set is left as it is, and on a system without glibc,
or where the kernel's transparent huge pages are off, nothing changes.
"""

import os
import platform
import sys
from collections.abc import Mapping

TUNABLES_ENV = "GLIBC_TUNABLES"
HUGE_PAGES = "glibc.malloc.hugetlb=1"


def environment_with_huge_pages(environ: Mapping[str, str], libc: str) -> dict | None:
    """`environ` with glibc's huge-page tunable added, or None where there is nothing to change.

    None when the C library (`libc`, as `platform.libc_ver()` names it) is not
    glibc, or when `GLIBC_TUNABLES` is already set: the user's own tunables win.
    """
    if libc != "glibc" or TUNABLES_ENV in environ:
        return None
    return {**environ, TUNABLES_ENV: HUGE_PAGES}


def restart_with_huge_pages() -> None:
    """Re-executes this Python process with the same command line and huge pages, if that changes anything."""
    environ = environment_with_huge_pages(os.environ, platform.libc_ver()[0])
    if environ is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], environ)
