"""Errors a user can act on, and the wording their messages share. Imports nothing, so any module can raise them.

A `ConfigError` names a config field, what is wrong with its value and the
fix; a `ConfigFileError` is a config file that does not parse or raises when
run; a `UsageError` is a malformed command line. The command line reports
each in a line or two and exits with status 2, before anything is compiled or
written.
"""


class ConfigError(ValueError):
    """A config value that cannot work; the message names the field and how to fix it."""

    def __init__(self, field: str, problem: str, fix: str):
        super().__init__(f"config.{field}: {problem}; {fix}")
        self.field = field


class ConfigFileError(ValueError):
    """A config file that does not parse, or raises when run: its path, the line in it, and Python's message."""

    def __init__(self, path: str, line: int | None, message: str, source: str = ""):
        where = f"{path}, line {line}" if line else path
        super().__init__(f"{where}: {message}" + (f"\n    {source.strip()}" if source.strip() else ""))
        self.path = path
        self.line = line


class UsageError(ValueError):
    """A malformed command line, or one asking for what this machine cannot do."""


def count(number: int, singular: str, plural: str = "") -> str:
    """`number` (with thousands separators) and its noun: "1 device", "2,048 devices", "2 processes" (with `plural`)."""
    return f"{number:,} {singular if number == 1 else plural or singular + 's'}"
