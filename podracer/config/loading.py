"""Reading experiment configs: config files, command-line overrides, and the fields a user may add.

Experiments are `ml_collections` config files under `configs/` (the convention
of flax's examples): each defines `get_config()` starting from
`podracer.defaults(agent, architecture)` and overriding what it needs.
`load(path, overrides)` is the one way to read such a file, for the command
line, the scripts and the tests alike: an override's text is read as the
field's type, and an unknown field or an unreadable value is a `ConfigError`
naming the field and the fix. A file that does not parse, or raises when run,
is a `ConfigFileError` with its path, the line and Python's message.
"""

import ast
import contextlib
import difflib
import os
import runpy
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ml_collections import ConfigDict

from podracer.config import field_checks, population
from podracer.config.errors import ConfigError, ConfigFileError

# Groups whose fields are the user's (an environment's options, a population's members): overrides may add to them.
OPEN_FIELDS = ("env.kwargs", population.FIELD)
# Groups only some agents have (dotted field: (which agents, the fix)), registered by the agents that have them, so
# setting one on another agent says so instead of listing that agent's fields.
_AGENT_ONLY_GROUPS: dict[str, tuple[str, str]] = {}


def register_agent_only_group(field: str, which: str, fix: str) -> None:
    """Makes an unknown `field` (e.g. "agent.meta_gradient") or a field under it say `which` agents have it, and `fix`."""
    _AGENT_ONLY_GROUPS[field] = (which, fix)


def load(
    path: str, overrides: Mapping[str, Any] = None, agent_group: Callable[[str], ConfigDict] | None = None
) -> ConfigDict:
    """The config `path`'s `get_config()` returns, with `overrides` applied, then locked against new fields.

    `overrides` maps dotted fields to values, e.g. `{"agent.gamma": 0.9}`. A
    value may also be text as typed on a command line (`"0.9"`, `"(0, 1)"`,
    `"True"`), which is read as the field's type. An unknown field or a value
    of the wrong type raises `ConfigError`; a missing file `FileNotFoundError`;
    a file that does not parse, or raises when run, `ConfigFileError`.

    With `agent_group` (an agent's name -> its `agent` group at its defaults),
    an `agent.name` among the overrides that names another agent than the
    file's switches the config to it: its defaults replace the file's `agent`
    group before the other overrides apply, so that those override them and a
    field the new agent does not read is refused, named. `podracer.load_config`
    passes the registered agents'.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no config file {path!r}; pass a file from configs/, e.g. configs/anakin_catch.py")
    with _reading(path):
        get_config = runpy.run_path(path).get("get_config")
    if not callable(get_config):
        raise ValueError(f"{path} defines no get_config(); a config file returns its ConfigDict from get_config()")
    with _reading(path):
        config = get_config()
    if not isinstance(config, ConfigDict):
        raise ValueError(f"{path}'s get_config() returned {type(config).__name__}, not the ConfigDict of defaults()")
    overrides = dict(overrides or {})
    if agent_group is not None and "agent.name" in overrides:
        _switch_agent(config, overrides.pop("agent.name"), agent_group)
    for field, value in overrides.items():
        override(config, field, value, source=path)
    config.lock()
    for field in OPEN_FIELDS:
        group = field_checks.get(config, field)
        if not isinstance(group, ConfigDict):
            raise ConfigError(
                field, f"must be a group of options, got {group!r}", f"set options one by one: {field}.NAME"
            )
        group.unlock()
    return config


def _switch_agent(config: ConfigDict, name: Any, agent_group: Callable[[str], ConfigDict]) -> None:
    """Replaces the file's `agent` group with agent `name`'s defaults; where the file names that agent, its own stays."""
    if name != field_checks.get(config, "agent.name"):
        config.agent = agent_group(name)


@contextlib.contextmanager
def _reading(path: str) -> Iterator[None]:
    """Turns an exception raised while running the config file `path` into a `ConfigFileError` (a `ConfigError` stays).

    The error names the file's own line the exception came from (the deepest
    frame in it, or where it does not parse) and Python's message, so a user
    sees their mistake rather than a traceback through podracer; the original
    exception is chained as its cause.
    """
    try:
        yield
    except ConfigError:
        raise  # Raised by the file, or by podracer for it: it already names the field and the fix.
    except Exception as error:
        if isinstance(error, SyntaxError) and _same_file(error.filename, path):
            raise ConfigFileError(
                path, error.lineno, f"{type(error).__name__}: {error.msg}", error.text or ""
            ) from error
        frames = [frame for frame in traceback.extract_tb(error.__traceback__) if _same_file(frame.filename, path)]
        message = "".join(traceback.format_exception_only(error)).strip()
        line, source = (frames[-1].lineno, frames[-1].line or "") if frames else (None, "")
        raise ConfigFileError(path, line, message, source) from error


def _same_file(name: str | None, path: str) -> bool:
    return name is not None and os.path.abspath(name) == os.path.abspath(path)


def override(config: ConfigDict, field: str, value: Any, source: str = "the config") -> None:
    """Sets the dotted `field` to `value` (text is read as the field's type); `ConfigError` if it cannot be."""
    *parents, leaf = field.split(".")
    node = config
    for depth, part in enumerate(parents):
        if _is_open(parents[:depth]) and part not in node:  # A population field's group, say.
            node[part] = ConfigDict()
        if not isinstance(node, ConfigDict) or part not in node:
            unknown_field(field, node, ".".join(parents[:depth]), source)
        node = node[part]
    is_open = _is_open(parents)
    if not isinstance(node, ConfigDict) or (leaf not in node and not is_open):
        unknown_field(field, node, ".".join(parents), source)
    current = node.get(leaf)
    if isinstance(current, ConfigDict):
        raise ConfigError(
            field, "is a group of fields", f"set its fields one by one, e.g. --config.{field}.FIELD=VALUE"
        )
    if isinstance(value, str) and not isinstance(current, str):
        value = _read(field, value, current)
    try:
        node[leaf] = value
    except TypeError:
        raise ConfigError(
            field,
            f"{value!r} is not a {type(current).__name__}",
            f"give a {type(current).__name__}, like the default {current!r}",
        ) from None


def _is_open(parents: list[str]) -> bool:
    """Whether a field under the group `parents` is the user's to add: within one of `OPEN_FIELDS`."""
    return any(parents[: len(field.split("."))] == field.split(".") for field in OPEN_FIELDS)


def _read(field: str, text: str, current: Any) -> Any:
    """Command-line text as the type of the field's current value."""
    kind = type(current)
    try:
        if kind is bool:
            return {"true": True, "1": True, "false": False, "0": False}[text.strip().lower()]
        if kind is int:
            number = float(text)  # Reads "64", "1e6" and "1_000_000" alike.
            if not number.is_integer():
                raise ValueError
            return int(number)
        if kind is float:
            return float(text)
        if kind in (tuple, list):
            value = ast.literal_eval(text)
            if not isinstance(value, (tuple, list)):
                raise ValueError
            return tuple(value)
        return ast.literal_eval(text)
    except (KeyError, ValueError, SyntaxError):
        if current is None or (kind not in (bool, int, float, tuple, list)):
            return text  # A free-form field (an environment option, say): the text itself.
        what = {bool: "True or False", int: "a whole number", float: "a number", tuple: "a tuple", list: "a tuple"}
        example = f'"{tuple(current)}"' if kind in (tuple, list) else repr(current)  # The value it has.
        raise ConfigError(
            field, f"cannot read {text!r} as {what[kind]}", f"pass e.g. --config.{field}={example}"
        ) from None


def unknown_field(field: str, node: Any, parent: str, source: str) -> None:
    """Raises the `ConfigError` for `field`, which `node`, the value at `parent`, does not have."""
    where = f"config.{parent}" if parent else "config"
    missing = (f"{parent}." if parent else "") + field[len(parent) :].lstrip(".").split(".")[0]
    if missing in _AGENT_ONLY_GROUPS and isinstance(node, ConfigDict):
        which, fix = _AGENT_ONLY_GROUPS[missing]
        raise ConfigError(missing, f"agent {node.get('name')!r} has no such group; {which}", fix)
    if not isinstance(node, ConfigDict):
        raise ConfigError(
            field, f"{source} has no such field ({where} is one value, not a group)", f"set --{where}=VALUE itself"
        )
    siblings = sorted(node.keys())
    close = difflib.get_close_matches(field[len(parent) :].lstrip(".").split(".")[0], siblings, n=1)
    hint = f"did you mean {where}.{close[0]}? " if close else ""
    raise ConfigError(field, f"{source} has no such field", f"{hint}the fields of {where} are {siblings}")


def with_experiment_of(config: ConfigDict, other: ConfigDict) -> ConfigDict:
    """`config` (one agent's defaults) with every field of the config `other` but its agent, and the agent fields the
    two agents share: one experiment for two agents, as the config files that compare C51 with DQN or QMIX with VDN
    set it up."""
    for field, value in other.items():
        if field != "agent":
            config[field] = value
    for field, value in other.agent.items():
        if field in config.agent and field != "name":
            config.agent[field] = value
    return config
