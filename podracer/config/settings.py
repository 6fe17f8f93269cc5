"""A config group read into plain values: the typed settings a builder hands to the code below it.

Networks, search and replay take frozen dataclasses of plain values rather
than a config. An agent's builder reads its groups once with `read` and
passes the settings down, so a leaf's arguments say what it uses, and a
test can build one without a config.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

Settings = TypeVar("Settings")


def read(settings_class: type[Settings], group: Mapping[str, Any]) -> Settings:
    """`settings_class` (a dataclass) with each field's value from the same-named field of `group`; other fields of
    the group (an agent's own, beside the search's or the replay's) are left for others to read."""
    return settings_class(**{field.name: group[field.name] for field in dataclasses.fields(settings_class)})


def defaults(settings_class: type) -> dict[str, Any]:
    """The fields of a settings dataclass at their defaults: the config group (or part of one) it is read from."""
    return dataclasses.asdict(settings_class())
