"""Every field of an experiment: the defaults for an agent on an architecture, and static validation of a config.

`defaults(agent, architecture)` assembles a config from the run's common
fields, the architecture's (`podracer.anakin.anakin_settings`,
`podracer.sebulba.sebulba_settings`), the network's and optimiser's, and the agent's
own (its registry entry). `validate` checks types, ranges, choices and
cross-field rules before any device is touched; what depends on the machine
(device counts, environment options) is checked as each architecture builds
its run, still before anything is compiled. Every failure is a `ConfigError`
naming the field and the fix.
"""

from collections.abc import Mapping
from typing import Any

from ml_collections import ConfigDict

from podracer import agents
from podracer.agents.learning.optimizer import OPTIMIZERS, OptimizerSettings
from podracer.agents.models.cores import CORES
from podracer.agents.models.network_settings import NetworkSettings
from podracer.agents.models.torsos import TORSOS, VECTOR_TORSOS
from podracer.anakin import anakin_settings
from podracer.config import field_checks, loading, pbt_settings, population, settings
from podracer.config.errors import ConfigError
from podracer.config.loading import OPEN_FIELDS, unknown_field
from podracer.offline import offline_settings
from podracer.run import evaluation, wandb_logger
from podracer.sebulba import sebulba_settings

ARCHITECTURES = {"anakin": anakin_settings, "sebulba": sebulba_settings}
RESUME_MODES = ("auto", "never", "must")  # See podracer.run.checkpoints.
ACTIVATIONS = ("tanh", "relu", "swish")


def defaults(agent: str = "actor_critic", architecture: str = "anakin") -> ConfigDict:
    """Every field an experiment with the registered `agent` on `architecture` reads, at sensible values."""
    if architecture not in ARCHITECTURES:
        raise ValueError(f"Unknown architecture {architecture!r}; choose one of {sorted(ARCHITECTURES)}.")
    config = ConfigDict()
    config.architecture = architecture
    config.seed = 0
    config.replicas = (
        1  # Processes (hosts) in the job; the one value that scales out (see podracer.devices.distributed).
    )
    config.total_steps = 1_000_000  # Environment steps over the whole run (every device, every actor).
    # XLA:CPU threads (see podracer.devices.xla_cpu): one suits Anakin's small networks, 0 (one per core) Sebulba's
    # actor and learner devices sharing the CPU.
    config.cpu_threads = 1 if architecture == "anakin" else 0
    # XLA:CPU devices to split the CPU into (podracer.devices.xla_cpu); no effect on an accelerator. Anakin's 0: one
    # per core, as many as its environments divide into. Sebulba places its actors and learners on devices by position.
    config.cpu_devices = 0 if architecture == "anakin" else 1
    config.checkpoint = ConfigDict(  # With a workdir, checkpoints go to WORKDIR/checkpoints (podracer.run.checkpoints).
        {
            "every_updates": 0,  # Save every N updates (0: not by count).
            "every_minutes": 10.0,  # Save every M minutes of wall time (0: not by time). Also at the end.
            "keep": 3,  # The newest K are kept.
        }
    )
    config.evaluation = (
        evaluation.defaults()
    )  # Periodic evaluation on environments of its own (podracer.run.evaluation).
    config.resume = "auto"  # auto: resume from the workdir's newest checkpoint if any; never: start afresh; must.
    config.check_finite = True  # Stop at the first non-finite loss, gradient or parameter (podracer.run.finite).
    wandb_logger.add_defaults(config)  # Trackers beside TensorBoard and metrics.jsonl: config.logger.wandb.
    offline_settings.add_defaults(config)  # Training from a dataset: config.offline (podracer.offline).
    ARCHITECTURES[architecture].add_defaults(config)
    config.network = ConfigDict(settings.defaults(NetworkSettings))  # The network's fields and their defaults.
    config.optimizer = ConfigDict(settings.defaults(OptimizerSettings))
    config.agent = agent_group(agent)
    # Anakin only: runs of this config differing in seed and hyperparameters, in one program (podracer.config.population).
    config.population = ConfigDict({population.PBT: pbt_settings.defaults()})  # PBT: podracer.config.pbt_settings.
    for field, value in agents.lookup(agent).config_defaults.items():  # What the agent needs otherwise.
        loading.override(config, field, value, source=f"{agent}'s registry entry")
    return config


def agent_group(name: str) -> ConfigDict:
    """The `agent` group of a config for the registered agent `name`: its name and its own fields at their defaults."""
    field_checks.one_of("agent.name", name, agents.names())
    return ConfigDict({"name": name, **agents.lookup(name).defaults()})


def load_config(path: str, overrides: Mapping[str, Any] | None = None) -> ConfigDict:
    """The config file `path` with `overrides` (`podracer.config.loading.load`), where `agent.name` among them
    switches the config to that registered agent, at its defaults: `--config.agent.name=ppo` on the command line."""
    return loading.load(path, overrides, agent_group=agent_group)


def validate(config: ConfigDict, *, agent_from_config: bool = True, env_from_config: bool = True) -> None:
    """Raises `ConfigError` for any value that cannot work on any machine. Touches no device.

    The network, optimiser and agent fields are checked when the agent is built
    from the config, the environment's name when the environment is. The
    config must have the fields of `defaults(agent, architecture)` and no
    others (a field misspelt in a config file, say), except `env.kwargs`.
    """
    if "meta" in config:  # podracer.experiment.meta_train's.
        raise ConfigError("meta", "makes this a meta-training config", "run it with podracer meta-train --config FILE")
    field_checks.choice(config, "architecture", ARCHITECTURES)
    if agent_from_config:
        field_checks.choice(config, "agent.name", agents.names())
    _validate_field_names(config, agent_from_config)
    field_checks.integer(config, "seed", at_least=0)
    field_checks.integer(config, "replicas", at_least=1)
    field_checks.integer(config, "total_steps", at_least=1, example=1_000_000, at_most=None)
    field_checks.integer(config, "cpu_threads", at_least=0, example=1)
    field_checks.integer(config, "cpu_devices", at_least=0 if config.architecture == "anakin" else 1, example=2)
    field_checks.integer(config, "unroll_length", at_least=1, example=20)
    field_checks.integer(config, "checkpoint.every_updates", at_least=0, example=100)
    field_checks.number(config, "checkpoint.every_minutes", example=10, at_least=0.0)
    field_checks.integer(config, "checkpoint.keep", at_least=1, example=3)
    field_checks.choice(config, "resume", RESUME_MODES)
    field_checks.boolean(config, "check_finite")
    evaluation.validate(config)
    wandb_logger.validate(config)
    offline_settings.validate(config, agent_from_config)
    ARCHITECTURES[config.architecture].validate(config, env_from_config)
    if agent_from_config:
        _validate_agent(config)
    population.validate(config, _validate_agent, agent_from_config)
    pbt_settings.validate(config, anakin_settings.steps_per_update(config) if config.architecture == "anakin" else 0)


def _validate_field_names(config: ConfigDict, agent_from_config: bool) -> None:
    """The config has the fields `defaults(agent, architecture)` has, and no others; `env.kwargs` is open.

    With an agent passed in, its groups (`agent`, `network`, `optimizer`) are
    the user's and not compared.
    """
    architecture = config.architecture
    agent = config.agent.name if agent_from_config else "actor_critic"
    expected = defaults(agent, architecture)
    skipped = set(OPEN_FIELDS) | (set() if agent_from_config else {"agent", "network", "optimizer"})
    missing = [field for field in _field_names(expected, skipped) if not _has_field(config, field)]
    others = [defaults(agent, other) for other in ARCHITECTURES if other != architecture]
    architectures = [field for field in missing if not any(_has_field(other, field) for other in others)]
    if architectures:  # The fields of another architecture's config, or none.
        raise ConfigError(
            "architecture",
            f"a config for {architecture} has the fields {architectures}, which this config lacks",
            f"start from a config for {architecture} (a configs/{architecture}_*.py file, or "
            f"podracer.defaults(agent, {architecture!r})) instead of changing the architecture of another",
        )
    agents_own = [field for field in missing if field.startswith("agent.")]
    if agents_own:  # The fields of another agent's config.
        raise ConfigError(
            "agent.name",
            f"agent {agent!r} reads {agents_own}, which this config lacks",
            f"start from a config made for {agent} (podracer.defaults({agent!r}, {architecture!r})), or switch "
            f"agents where the config is loaded (--config.agent.name={agent}, or "
            f"podracer.load_config(FILE, {{'agent.name': {agent!r}}})), which brings {agent}'s defaults",
        )
    for field in missing:
        field_checks.get(config, field)  # Raises, naming the field, or the group that is not one.
    for field in _field_names(config, skipped):
        parent = field.rpartition(".")[0]
        if not _has_field(expected, field) and _has_field(expected, parent):  # Misspelt, or another's.
            group = field_checks.get(expected, parent) if parent else expected
            unknown_field(field, group, parent, f"a config for {architecture}")


def _validate_agent(config: ConfigDict) -> None:
    """The network, optimiser and agent fields: what the agent is built from."""
    validate_network_and_optimizer(config)
    validate_agent = agents.lookup(config.agent.name).validate
    if validate_agent:
        validate_agent(config)


def _field_names(config: ConfigDict, skipped: set, prefix: str = "") -> list[str]:
    """The dotted names of every field and group under `config`, groups before their fields, `skipped` left out."""
    names = []
    for name, value in config.items():
        field = f"{prefix}{name}"
        if field not in skipped:
            names.append(field)
            if isinstance(value, ConfigDict):
                names.extend(_field_names(value, skipped, f"{field}."))
    return names


def _has_field(config: ConfigDict, field: str) -> bool:
    node = config
    for part in field.split(".") if field else []:
        if not isinstance(node, ConfigDict) or part not in node:
            return False
        node = node[part]
    return True


def validate_network_and_optimizer(config: ConfigDict) -> None:
    field_checks.choice(config, "network.torso", TORSOS)
    field_checks.choice(config, "network.activation", ACTIVATIONS)
    field_checks.integers(config, "network.hidden_sizes", at_least=1, example="(64, 64)")
    field_checks.boolean(config, "network.shared_torso")
    field_checks.integers(config, "network.channels", at_least=1, example="(16, 32, 32)")
    field_checks.integer(config, "network.num_blocks", at_least=0, example=2)
    field_checks.integer(config, "network.hidden_size", at_least=1, example=256)
    field_checks.choice(config, "network.core", CORES)
    field_checks.integer(config, "network.core_size", at_least=1, example=256)
    field_checks.integers(config, "network.head_hidden_sizes", at_least=1, example="(128,)", non_empty=False)
    field_checks.boolean(config, "network.layer_norm")
    if config.network.layer_norm and config.network.torso not in VECTOR_TORSOS:
        raise ConfigError(
            "network.layer_norm",
            f"the {config.network.torso} torso has no LayerNorm (only {' and '.join(VECTOR_TORSOS)} have)",
            "set --config.network.layer_norm=False, or use --config.network.torso=mlp",
        )
    field_checks.choice(config, "optimizer.name", OPTIMIZERS)
    field_checks.number(config, "optimizer.learning_rate", example=3e-4, above=0.0)
    field_checks.number(config, "optimizer.max_grad_norm", example=0.5, above=0.0)
    field_checks.number(config, "optimizer.eps", example=1e-5, at_least=0.0)
    field_checks.boolean(config, "optimizer.anneal_lr")
