"""Population-based training's settings: `config.population.pbt` (Jaderberg et al. 2017, "Population Based
Training of Neural Networks").

    config.population.seed = tuple(range(8))
    config.population.optimizer = {"learning_rate": (1e-4, 3e-4, 1e-3, 3e-3) * 2}
    config.population.pbt.ready_steps = 100_000        # each member's environment steps between ready points
    config.population.pbt.exploit_fraction = 0.25      # the bottom quarter copies the top quarter
    config.population.pbt.perturb_factors = (0.8, 1.25)
    config.population.pbt.resample_probability = 0.25  # else a copied value is perturbed
    config.population.pbt.bounds = {"optimizer.learning_rate": (1e-5, 1e-2)}

At each ready point the members are ranked by the mean return of the episodes
they finished since the last one; each of the bottom `exploit_fraction` takes
the learner state (parameters, optimiser state, targets, buffers) and the
hyperparameters of a member of the top `exploit_fraction` drawn at random
(truncation selection, the paper's section 3.1), then explores: every varied
hyperparameter is multiplied by one of `perturb_factors`, or with
`resample_probability` drawn afresh from the values the population started
with (its prior sample), and clipped to its `bounds` where given. What it
does runs in `podracer.anakin.exploit_explore`.
"""

from ml_collections import ConfigDict

from podracer.config import field_checks, population
from podracer.config.errors import ConfigError

GROUP = f"{population.FIELD}.{population.PBT}"


def defaults() -> ConfigDict:
    """The `population.pbt` group: off (`ready_steps` 0), with the paper's truncation and perturbation once on."""
    return ConfigDict(
        {
            "ready_steps": 0,  # Each member's environment steps between two ready points; 0: no PBT.
            "exploit_fraction": 0.25,  # The bottom share of members that copies the top share's.
            "perturb_factors": (0.8, 1.25),  # A copied hyperparameter is multiplied by one of these...
            "resample_probability": 0.25,  # ... or, with this probability, drawn from the population's first values.
            "bounds": ConfigDict(),  # {dotted field: (low, high)}: where an explored value is clipped to.
        }
    )


def settings(config: ConfigDict) -> ConfigDict:
    """`config.population.pbt`, or its defaults for a config written without it."""
    return config.get(population.FIELD, ConfigDict()).get(population.PBT, defaults())


def enabled(config: ConfigDict) -> bool:
    """Whether the run trains its population with PBT."""
    return bool(settings(config).get("ready_steps", 0))


def exploited(config: ConfigDict) -> int:
    """How many members copy another at each ready point: `exploit_fraction` of the population, rounded down."""
    return int(settings(config).exploit_fraction * population.size(config))


def ready_updates(config: ConfigDict, steps_per_update: int) -> int:
    """Whole updates between two ready points: `ready_steps` rounded down to whole updates."""
    return settings(config).ready_steps // steps_per_update


def validate(config: ConfigDict, steps_per_update: int) -> None:
    """Raises `ConfigError` for PBT settings that cannot work, before anything is built."""
    pbt = settings(config)
    if population.PBT not in config.get(population.FIELD, ConfigDict()):
        return  # A config made without the group (a member's own, an older run's): no PBT.
    if not isinstance(pbt, ConfigDict):
        raise ConfigError(GROUP, f"must be a group of fields, got {pbt!r}", f"set fields under it: {GROUP}.ready_steps")
    known = defaults()
    for name in pbt:
        if name not in known:
            raise ConfigError(f"{GROUP}.{name}", "is no PBT setting", f"use one of {sorted(known)}")
    field_checks.integer(config, f"{GROUP}.ready_steps", at_least=0, example=100_000)
    if not pbt.ready_steps:
        return
    members, varied = population.size(config), population.hyperparameters(config)
    if members < 2:
        raise ConfigError(
            f"{GROUP}.ready_steps",
            "needs a population to select from, and this config has none",
            'list the members, e.g. --config.population.seed="(0, 1, 2, 3)" and their learning rates',
        )
    if config.get("offline", ConfigDict()).get("dataset"):
        raise ConfigError(
            f"{GROUP}.ready_steps",
            "ranks members by the returns of the episodes they play, and a run that learns from a dataset plays none",
            f"train the population online, or set {GROUP}.ready_steps=0",
        )
    field_checks.number(config, f"{GROUP}.exploit_fraction", example=0.25, above=0.0, at_most=0.5)
    if exploited(config) < 1:
        raise ConfigError(
            f"{GROUP}.exploit_fraction",
            f"{pbt.exploit_fraction:g} of {members} members exploits none (it rounds down)",
            f"raise it to at least {1 / members:.3g}, or add members",
        )
    if not pbt.ready_steps >= steps_per_update:
        raise ConfigError(
            f"{GROUP}.ready_steps",
            f"{pbt.ready_steps:,} is less than one update ({steps_per_update:,} environment steps)",
            f"set it to a multiple of {steps_per_update:,}",
        )
    if pbt.ready_steps >= config.total_steps:
        raise ConfigError(
            f"{GROUP}.ready_steps",
            f"{pbt.ready_steps:,} steps between ready points is the whole run (total_steps={config.total_steps:,}) "
            "or more, so no member would ever be exploited",
            "make it a fraction of total_steps, e.g. a tenth",
        )
    factors = pbt.perturb_factors
    if not isinstance(factors, (tuple, list)) or not factors or not all(_positive(f) for f in factors):
        raise ConfigError(f"{GROUP}.perturb_factors", f"must list positive numbers, got {factors!r}", "(0.8, 1.25)")
    field_checks.fraction(config, f"{GROUP}.resample_probability", example=0.25)
    _validate_bounds(pbt.bounds, varied)


def _validate_bounds(bounds: ConfigDict, varied: dict) -> None:
    for field, bound in population.leaves(bounds).items():
        name = f"{GROUP}.bounds.{field}"
        if field not in varied:
            raise ConfigError(
                name,
                "bounds a field the population does not vary",
                f"bound one of {sorted(varied)}" if varied else "list that field's values under population first",
            )
        if not (isinstance(bound, (tuple, list)) and len(bound) == 2 and all(map(field_checks.is_number, bound))):
            raise ConfigError(name, f"must be (low, high), got {bound!r}", "e.g. (1e-5, 1e-2)")
        if not bound[0] < bound[1]:
            raise ConfigError(name, f"low {bound[0]!r} is not below high {bound[1]!r}", "give (low, high)")


def bounds(config: ConfigDict) -> dict[str, tuple[float, float]]:
    """`{dotted field: (low, high)}` for each varied hyperparameter PBT clips."""
    return {
        field: (float(low), float(high)) for field, (low, high) in population.leaves(settings(config).bounds).items()
    }


def _positive(value: object) -> bool:
    return field_checks.is_number(value) and value > 0
