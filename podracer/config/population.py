"""Populations: many runs of one Anakin config, differing in seed and numeric hyperparameters, in one program.

    config.population.seed = (0, 1, 2, 3)
    config.population.optimizer = {"learning_rate": (1e-3, 1e-3, 3e-4, 3e-4)}
    # podracer train --config configs/anakin_catch.py --config.population.seed="(0, 1, 2, 3)"

`config.population` mirrors the config: each field under it names a field of
the config and lists one value per member. A member is the config with those
values, run alone. Anakin vmaps its whole per-device program over the members
(PureJaxRL's trick), so each member has its own parameters, optimiser state,
environments and keys, and all of them share one compiled program and one
dispatch. A member differs in the numbers its agent reads (the learning rate, gamma, an
entropy cost: real-valued fields of `agent` and `optimizer`), which reach the
program as arrays, and in its seed. Fields that fix shapes (whole numbers) or
choices cannot vary within one program.
"""

from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np
from ml_collections import ConfigDict

from podracer.config import field_checks
from podracer.config.errors import ConfigError

FIELD = "population"
PBT = "pbt"  # The group under `population` that turns on population-based training (podracer.config.pbt_settings).
VARIABLE_GROUPS = ("agent", "optimizer")  # Where the hyperparameters a member may vary live, besides `seed`.


def values(config: ConfigDict) -> dict[str, tuple]:
    """`{dotted field: one value per member}` for every field `config.population` lists; empty for a single run."""
    return leaves(_without_pbt(config.get(FIELD, ConfigDict())))


def size(config: ConfigDict) -> int:
    """How many members the population has; 0 for a single run (no `config.population` fields)."""
    listed = values(config)
    return len(next(iter(listed.values()))) if listed else 0


def seeds(config: ConfigDict) -> tuple[int, ...]:
    """Each member's seed: `population.seed`, or `config.seed` for every member where it is not listed."""
    return tuple(values(config).get("seed", (config.seed,) * size(config)))


def keys(config: ConfigDict) -> jax.Array:
    """The key each member's run starts from, `[members]`; a single run's one key."""
    if not size(config):
        return jax.random.key(config.seed)
    return jax.vmap(jax.random.key)(np.asarray(seeds(config), np.uint32))


def hyperparameters(config: ConfigDict) -> dict[str, np.ndarray]:
    """`{dotted field: float32 array [members]}` of the hyperparameters that vary (everything listed but the seed)."""
    return {field: np.asarray(column, np.float32) for field, column in values(config).items() if field != "seed"}


def member(config: ConfigDict, index: int) -> ConfigDict:
    """Member `index` of the population as a config of its own: its values set, and no population."""
    return with_values(config, {field: column[index] for field, column in values(config).items()})


def with_values(config: ConfigDict, member_values: Mapping[str, Any]) -> ConfigDict:
    """A copy of `config` without a population (nor PBT), with each dotted field of `member_values` set.

    The values may be traced arrays: that is how a member's hyperparameters
    reach the agent built inside the vmapped program.
    """
    copy = config.copy_and_resolve_references()
    with copy.unlocked(), copy.ignore_type():
        pbt = copy[FIELD].get(PBT) if isinstance(copy.get(FIELD), ConfigDict) else None
        copy[FIELD] = ConfigDict()
        if pbt is not None:  # The member's PBT settings stay, turned off: a member is a run of its own.
            pbt.ready_steps = 0
            copy[FIELD][PBT] = pbt
        for field, value in member_values.items():
            *parents, leaf = field.split(".")
            group = copy
            for part in parents:
                group = group[part]
            group[leaf] = value
    return copy


def member_agents(config: ConfigDict, agent: Any, build: Callable[[ConfigDict], Any]) -> Callable[[dict], Any]:
    """`agent_for(hyperparameters)`: a member's agent, built by `build` from the config with its values.

    `agent` is the one built from the config itself, used where no
    hyperparameter varies (a single run, or a population of seeds), and the
    only one there is when the caller passed its own.
    """
    return lambda varied: build(with_values(config, varied)) if varied else agent


def naming_fixed_fields(trace: Callable[[dict], Any], varied: dict) -> Any:
    """`trace(varied)`; where an agent reads a varied hyperparameter as a Python number while its program is built
    (`if reward_clip > 0:`), a `ConfigError` naming that field instead of JAX's concretization error.

    The culprit is found by tracing with one field varied at a time, which
    costs time only on the way to the error.
    """
    try:
        return trace(varied)
    except jax.errors.ConcretizationTypeError:
        for field, column in varied.items():
            try:
                trace({field: column})
            except jax.errors.ConcretizationTypeError:
                raise ConfigError(
                    f"{FIELD}.{field}",
                    "the agent reads it as a Python number while building its program (it decides the program's "
                    "structure rather than entering its arithmetic), so it cannot differ between members",
                    "run its values as separate runs, or have the agent compute with it as an array",
                ) from None
        raise


def validate(config: ConfigDict, validate_member: Callable[[ConfigDict], None], agent_from_config: bool) -> None:
    """Raises `ConfigError` for a population that cannot run: its fields, their values, and each member's config.

    `validate_member` is the config's own validation of the agent's fields,
    run on every member whose hyperparameters differ, so that, say, a negative
    learning rate in the population is refused like one in the config, but
    named as the population's field. Members that differ only in their seed
    (an agent passed to `train()` allows no more) have nothing else to check.
    """
    group = config.get(FIELD, ConfigDict())
    if not isinstance(group, ConfigDict):
        raise ConfigError(FIELD, f"must be a group of fields, got {group!r}", _EXAMPLE)
    listed = values(config)
    if not listed:
        return
    if config.architecture != "anakin":
        raise ConfigError(
            FIELD,
            f"{config.architecture} runs one member: its actors step host environments, which cannot be vmapped",
            "train populations with Anakin (a configs/anakin_*.py config), or launch one Sebulba run per member",
        )
    for field, column in listed.items():
        _check_field(config, field, column, agent_from_config)
    lengths = {field: len(column) for field, column in listed.items()}
    first, count = next(iter(lengths.items()))
    for field, length in lengths.items():
        if length != count:
            raise ConfigError(
                f"{FIELD}.{field}",
                f"lists {length} values but {FIELD}.{first} lists {count}",
                "list one value per member in every population field",
            )
    for index in range(count if set(listed) != {"seed"} else 0):
        try:
            validate_member(member(config, index))
        except ConfigError as error:
            if error.field not in listed:
                raise
            raise ConfigError(
                f"{FIELD}.{error.field}",
                f"member {index}'s value {listed[error.field][index]!r} is refused ({error})",
                "give every member a value the field accepts",
            ) from None


def members_of(tree: Any, members: int) -> list:
    """`[tree]` for a single run (`members` 0); a population's `tree` (leading member axis) as one tree per member."""
    return [jax.tree.map(lambda x, i=i: x[i], tree) for i in range(members)] if members else [tree]


def summary(member_records: list[dict]) -> dict:
    """The population's fields of a log record: its members' best and median mean episode return and their spread.

    The spread is the interquartile range (75th minus 25th percentile), which
    one diverged member does not swamp. NaN while no member finished an episode.
    """
    returns = np.array([record["mean_episode_return"] for record in member_records], np.float64)
    if np.isnan(returns).all():
        return {"best_member": -1, "best_return": np.nan, "median_return": np.nan, "return_spread": np.nan}
    q25, q50, q75 = np.nanpercentile(returns, (25, 50, 75))
    best = int(np.nanargmax(returns))
    return {
        "best_member": best,
        "best_return": float(returns[best]),
        "median_return": float(q50),
        "return_spread": float(q75 - q25),
    }


_EXAMPLE = 'list one value per member, e.g. --config.population.seed="(0, 1, 2, 3)"'


def can_vary(config: ConfigDict, field: str) -> bool:
    """Whether members of one program may differ in `field`: a real-valued field of `agent` or `optimizer`.

    Those reach the program as arrays; whole numbers and choices fix its
    shapes or its structure. (An agent may still read one as a Python number
    while building its program: `naming_fixed_fields` names it then.)
    """
    return field.split(".")[0] in VARIABLE_GROUPS and isinstance(_value_at(config, field), float)


def _without_pbt(group: ConfigDict) -> ConfigDict:
    return ConfigDict({name: value for name, value in group.items() if name != PBT})


def _check_field(config: ConfigDict, field: str, column: Any, agent_from_config: bool) -> None:
    name = f"{FIELD}.{field}"
    if not isinstance(column, (tuple, list)) or not column:
        raise ConfigError(name, f"must list one value per member, got {column!r}", _EXAMPLE)
    if field == "seed":
        if not all(field_checks.is_whole_number(seed, 0) for seed in column):
            raise ConfigError(name, f"seeds are whole numbers from 0, got {column!r}", _EXAMPLE)
        return
    current = _value_at(config, field)
    if not can_vary(config, field):
        what = "no field of the config" if current is _MISSING else f"config.{field} (= {current!r}), no real number"
        raise ConfigError(
            name,
            f"names {what} that a member's agent reads",
            "vary the seed or a real-valued field of agent or optimizer (e.g. population.optimizer.learning_rate, "
            "population.agent.gamma); whole numbers and choices fix the program's shapes, so run them separately",
        )
    if not agent_from_config:
        raise ConfigError(
            name,
            "varies a hyperparameter of an agent passed to train(), which is built once",
            "vary only population.seed, or register the agent (podracer.agents.register) and name it in agent.name",
        )
    if not all(field_checks.is_number(value) for value in column):
        raise ConfigError(name, f"lists {column!r}, not numbers", f"list one number per member, like {current!r}")


_MISSING = object()


def _value_at(config: ConfigDict, field: str) -> Any:
    node = config
    for part in field.split("."):
        if not isinstance(node, ConfigDict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def leaves(group: ConfigDict, prefix: str = "") -> dict[str, Any]:
    """`{dotted name: value}` for every field under `group`, its subgroups flattened."""
    found = {}
    for name, value in group.items():
        if isinstance(value, ConfigDict):
            found.update(leaves(value, f"{prefix}{name}."))
        else:
            found[f"{prefix}{name}"] = value
    return found
