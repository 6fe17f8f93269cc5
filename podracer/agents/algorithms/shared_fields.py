"""The fields several agents share, read into values: replay, search, exploration, the optimiser, the network.

What `podracer.agents.learning.replay`, `recurrent_replay` and
`podracer.agents.algorithms.search` take as values is read here from
`config.agent` (and the device split) by the builders of the agents that use
them: replay for DQN (with R2D2's fields), MuZero, AlphaZero, SAC and TD3, the
search for MuZero and AlphaZero, epsilon-greedy exploration for DQN and PQN;
and what `make_optimizer` and `podracer.agents.models.networks` take, from
`config.optimizer` and `config.network`.
"""

from ml_collections import ConfigDict

from podracer.agents.algorithms import search
from podracer.agents.algorithms.search import SearchSettings
from podracer.agents.learning import replay
from podracer.agents.learning.exploration import EpsilonSettings
from podracer.agents.learning.optimizer import OptimizerSettings
from podracer.agents.learning.replay import ReplaySettings, ReplaySetup
from podracer.agents.models.network_settings import NetworkSettings
from podracer.config import field_checks, settings
from podracer.config.errors import ConfigError
from podracer.devices.device_split import environments_per_learner_device, learn_calls_per_update

REPLAY_DEFAULTS = settings.defaults(ReplaySettings)
"""The replay fields of `config.agent` for an agent that learns from a buffer."""

REPLAY_CONFIG_DEFAULTS = {"cpu_devices": 1}
"""The registry's `config_defaults` of an agent that learns from a buffer: one XLA:CPU device unless set, not one per
core. Each device keeps a buffer of its own and samples `batch_size` from it, so the device count is part of the
experiment (its batch and its memory), which a run must not take from the machine it lands on."""

OFFLINE_CONFIG_DEFAULTS = {"cpu_devices": 1}
"""The registry's `config_defaults` of an agent that learns from a dataset: one XLA:CPU device unless set, so that a
run's speed does not depend on the cores of the machine it lands on. Its batch is the same on any number of devices
(`podracer.offline.sampling`): `--config.cpu_devices=N` splits it."""


def learns_from_dataset(config: ConfigDict) -> bool:
    """Whether the run trains from a dataset (`config.offline.dataset`, `podracer.offline`), not its own experience:
    what an agent that can do either (IQL, ReBRAC) builds for."""
    return bool(config.offline.dataset)


EPSILON_DEFAULTS = settings.defaults(EpsilonSettings)
"""The exploration fields of `config.agent` for an agent that acts epsilon-greedily on Q-values."""

SEARCH_DEFAULTS = settings.defaults(SearchSettings)
"""The search fields of `config.agent` for an agent that acts by tree search."""

RECURRENT_DEFAULTS = {
    "burn_in": 0,  # Steps at a sequence's start that only warm the recurrent state (a recurrent core only).
    "sequence_length": 1,  # Transitions per sampled sequence, burn-in included (> 1 for a recurrent core only).
    "priority_eta": 0.9,  # A sequence's priority: eta max |TD| + (1 - eta) mean |TD| of its trained transitions.
}
"""R2D2's fields of DQN's `config.agent`."""


def validate_epsilon(config: ConfigDict) -> None:
    """Static checks of the `EPSILON_DEFAULTS` fields, each in [0, 1]."""
    for field, example in EPSILON_DEFAULTS.items():
        field_checks.fraction(config, f"agent.{field}", example=example)


def validate_replay(config: ConfigDict) -> None:
    """Static checks of the replay fields (the `REPLAY_DEFAULTS` keys in `config.agent`)."""
    for field, example in (("buffer_size", 10_000), ("min_replay_size", 1_000), ("batch_size", 128)):
        field_checks.integer(config, f"agent.{field}", at_least=1, example=example)
    field_checks.integer(config, "agent.replay_ratio", at_least=1, example=1)
    field_checks.boolean(config, "agent.prioritised")
    field_checks.fraction(config, "agent.priority_exponent", example=0.6)
    field_checks.fraction(config, "agent.importance_exponent", example=0.4)
    if config.agent.min_replay_size > config.agent.buffer_size:
        raise ConfigError(
            "agent.min_replay_size",
            f"{config.agent.min_replay_size} is more than the buffer holds ({config.agent.buffer_size})",
            "set --config.agent.min_replay_size at most agent.buffer_size",
        )


def validate_recurrent(config: ConfigDict) -> None:
    """Static checks of the `RECURRENT_DEFAULTS` fields: whole numbers, a burn-in shorter than the sequence, a recurrent core."""
    field_checks.integer(config, "agent.burn_in", at_least=0, example=2)
    field_checks.integer(config, "agent.sequence_length", at_least=1, example=8)
    field_checks.fraction(config, "agent.priority_eta", example=0.9)
    agent = config.agent
    if config.network.core == "none":
        for field, feed_forward in (("burn_in", 0), ("sequence_length", 1)):
            if agent[field] != feed_forward:
                raise ConfigError(
                    f"agent.{field}",
                    f"{agent[field]} is for a recurrent core (network.core lstm or gru): a feed-forward "
                    "Q-network learns from one transition per sampled sequence",
                    f"set --config.network.core=lstm, or --config.agent.{field}={feed_forward}",
                )
    if agent.burn_in >= agent.sequence_length:
        raise ConfigError(
            "agent.burn_in",
            f"a burn-in ({agent.burn_in} steps) as long as the sequence ({agent.sequence_length} transitions) "
            "or longer leaves nothing to learn from",
            f"set --config.agent.burn_in below agent.sequence_length, e.g. {agent.sequence_length // 2}",
        )


def require_feed_forward(config: ConfigDict, why: str) -> None:
    """Refuses a recurrent core (`config.network.core`) for an agent that has no use for one, saying `why`."""
    if config.network.core != "none":
        raise ConfigError(
            "network.core",
            f"{why}; it takes no {config.network.core} core",
            "set --config.network.core=none, or pick an agent that takes a core (the network.core column of "
            "docs/what-ships.md)",
        )


def replay_setup(config: ConfigDict, sequence_length: int) -> ReplaySetup:
    """The buffer and replay loop `config.agent`'s replay fields describe, sampling sequences of `sequence_length`."""
    return replay.setup(
        settings.read(ReplaySettings, config.agent),
        rows=environments_per_learner_device(config),
        learn_calls_per_update=learn_calls_per_update(config),
        unroll_length=config.unroll_length,
        sequence_length=sequence_length,
    )


def validate_search(config: ConfigDict) -> None:
    """Static checks of the search fields (the `SEARCH_DEFAULTS` keys in `config.agent`)."""
    field_checks.choice(config, "agent.search", search.SEARCHES)
    field_checks.integer(config, "agent.num_simulations", at_least=1, example=50)
    field_checks.number(config, "agent.temperature", example=1.0, above=0.0)
    field_checks.number(config, "agent.dirichlet_alpha", example=0.25, above=0.0)
    field_checks.fraction(config, "agent.dirichlet_fraction", example=0.25)
    field_checks.number(config, "agent.pb_c_init", example=1.25, above=0.0)
    field_checks.number(config, "agent.pb_c_base", example=19652.0, above=0.0)
    field_checks.integer(config, "agent.max_num_considered_actions", at_least=1, example=16)
    field_checks.number(config, "agent.gumbel_scale", example=1.0, at_least=0.0)


def search_settings(config: ConfigDict) -> SearchSettings:
    """The search `config.agent`'s search fields describe."""
    return settings.read(SearchSettings, config.agent)


def epsilon_settings(config: ConfigDict) -> EpsilonSettings:
    """The exploration `config.agent`'s epsilon fields describe."""
    return settings.read(EpsilonSettings, config.agent)


def optimizer_settings(config: ConfigDict) -> OptimizerSettings:
    """`config.optimizer` as `make_optimizer` takes it."""
    return settings.read(OptimizerSettings, config.optimizer)


def network_settings(config: ConfigDict) -> NetworkSettings:
    """The network `config.network` describes."""
    return settings.read(NetworkSettings, config.network)
