"""Errors a user can act on. Imports nothing heavy, so any module (and any script) can raise them early."""


class ConfigError(ValueError):
    """A config value that cannot work; the message names the field and how to fix it."""

    def __init__(self, field: str, problem: str, fix: str):
        super().__init__(f"config.{field}: {problem}; {fix}")
        self.field = field
