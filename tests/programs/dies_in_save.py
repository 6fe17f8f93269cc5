"""Runs another program of `tests/programs/` and SIGKILLs it in the middle of writing the checkpoint of update N.

    python -m tests.programs.dies_in_save N WHERE PROGRAM ARGS...

runs `python -m tests.programs.PROGRAM ARGS...` (`resumable_run`, say) in this
process. Orbax writes a checkpoint into `checkpoints/N.orbax-checkpoint-tmp`
and renames it to `checkpoints/N` once complete, each item (`meta`, then
`state`) likewise inside it. This program wraps the rename that orbax's atomic
save uses (`async_path.rename` in `orbax.checkpoint._src.path.atomicity`) and
kills its own process at the rename WHERE names, once all before it is on disk:

    state  the `state` item's: its arrays written, `meta` already in place
    step   the whole checkpoint's: every item in place, the commit-success file written

Nothing else changes: without reaching N it runs as PROGRAM does. In a job of
several processes only the primary one (0) renames, so only it dies.
"""

import os
import runpy
import signal
import sys

from orbax.checkpoint._src.path import atomicity

TMP_SUFFIX = ".orbax-checkpoint-tmp"

if __name__ == "__main__":
    update, where = sys.argv[1], sys.argv[2]
    if where not in ("state", "step"):
        sys.exit(f"WHERE must be 'state' or 'step', not {where!r}")
    rename = atomicity.async_path.rename

    async def rename_or_die(source, destination):
        name, parent = os.path.basename(str(destination)), os.path.basename(os.path.dirname(str(destination)))
        if (where == "step" and name == update and str(source).endswith(TMP_SUFFIX)) or (
            where == "state" and name == "state" and parent == update + TMP_SUFFIX
        ):
            print(f"dies_in_save: SIGKILL before renaming {source} to {destination}", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return await rename(source, destination)

    atomicity.async_path.rename = rename_or_die
    program, sys.argv = sys.argv[3], [sys.argv[0], *sys.argv[4:]]
    runpy.run_module(f"tests.programs.{program}", run_name="__main__", alter_sys=True)
