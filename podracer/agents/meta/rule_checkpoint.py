"""A learned update rule on disk: an LPG meta-network's parameters and the settings that rebuild it.

A rule is a folder: `settings.json` (`lpg_rule.RuleSettings` as JSON) and
`params/`, the parameters as an orbax checkpoint. The meta-trainer saves with
`save_rule`, the `learned_rule` agent loads with `load_rule`, and config
validation reads only the settings (`read_settings`), so a missing or
mismatched rule is reported before anything compiles.
"""

import dataclasses
import json
import os
from typing import Any

import jax
import orbax.checkpoint as ocp

from podracer.agents.meta.lpg_rule import RuleSettings, init_rule

SETTINGS_FILE = "settings.json"
PARAMS_FOLDER = "params"


def save_rule(path: str, meta_params: Any, settings: RuleSettings) -> None:
    """Writes the rule into the folder `path` (created; an existing rule there is replaced)."""
    path = os.path.abspath(path)
    os.makedirs(path, exist_ok=True)
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(os.path.join(path, PARAMS_FOLDER), jax.device_get(meta_params), force=True)
    with open(os.path.join(path, SETTINGS_FILE), "w") as f:
        json.dump(dataclasses.asdict(settings), f)


def read_settings(path: str) -> RuleSettings:
    """The settings of the rule at `path`, from its JSON file alone; `FileNotFoundError` where there is none."""
    with open(os.path.join(path, SETTINGS_FILE)) as f:
        return RuleSettings(**json.load(f))


def load_rule(path: str) -> tuple[Any, RuleSettings]:
    """`(meta_params, settings)` of the rule at `path`, the parameters restored into the meta-network's structure."""
    settings = read_settings(path)
    target = jax.eval_shape(lambda: init_rule(jax.random.key(0), settings))
    with ocp.StandardCheckpointer() as checkpointer:
        params = checkpointer.restore(os.path.join(os.path.abspath(path), PARAMS_FOLDER), target)
    return params, settings
