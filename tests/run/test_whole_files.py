"""Files written whole: the path holds the old file or the new one, never a part, and no temporary is left."""

import contextlib
import os

import pytest

from podracer.run.whole_files import partial_path, write_text, written_whole


def test_a_finished_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text("old\n")
    write_text(str(path), "new\n")
    assert path.read_text() == "new\n"
    assert os.listdir(tmp_path) == ["records.jsonl"]


def test_a_failed_write_keeps_the_old_file_and_removes_its_half(tmp_path):
    path = tmp_path / "policy.bin"
    path.write_bytes(b"old")
    with pytest.raises(OSError, match="disk full"), written_whole(str(path)) as partial:
        with open(partial, "wb") as f:
            f.write(b"ne")
        raise OSError("disk full")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["policy.bin"]


def test_several_files_are_renamed_only_once_all_are_written(tmp_path):
    """A failure writing the second leaves the first as it was: callers write a set of files that go together."""
    first, second = tmp_path / "a.json", tmp_path / "b.bin"
    first.write_text("old a")
    with pytest.raises(OSError, match="second"), contextlib.ExitStack() as stack:
        for path, text in ((first, "new a"), (second, None)):
            partial = stack.enter_context(written_whole(str(path)))
            if text is None:
                raise OSError("second")
            with open(partial, "w") as f:
                f.write(text)
    assert first.read_text() == "old a" and not second.exists()
    assert os.listdir(tmp_path) == ["a.json"]


def test_the_temporary_is_hidden_beside_the_file_and_keeps_an_ending_when_asked(tmp_path):
    video = str(tmp_path / "run.gif")
    assert partial_path(video) == str(tmp_path / ".run.gif.partial")
    assert partial_path(video, ".gif") == str(tmp_path / ".run.gif.partial.gif")
