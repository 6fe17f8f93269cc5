"""Files written whole: a reader, or a run killed mid-write, never sees half of one.

Every file podracer writes for others to read (records, an exported policy, a
video, a figure, benchmark results) is written under a temporary name beside
it and renamed over it once complete: a rename within one folder is atomic,
so the path holds the old file or the new one, never a part.
"""

import contextlib
import os
from collections.abc import Iterator


def partial_path(path: str, extension: str = "") -> str:
    """The hidden temporary file beside `path` that becomes it: `.NAME.partial`, then `extension` for writers that
    choose their format by the file's ending (imageio)."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{name}.partial{extension}")


@contextlib.contextmanager
def written_whole(path: str, extension: str = "") -> Iterator[str]:
    """Yields the temporary path to write `path` to; renames it over `path` when the block ends, or removes it if
    the block raises. Nested for several files, each is renamed only after every block has written its own."""
    partial = partial_path(path, extension)
    try:
        yield partial
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def write_text(path: str, text: str) -> None:
    """Writes `text` to `path` whole."""
    with written_whole(path) as partial, open(partial, "w") as f:
        f.write(text)
