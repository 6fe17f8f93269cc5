"""The replay fields of a config: their defaults, their checks, and the replay loop they describe.

What `podracer.agents.learning.replay` and `recurrent_replay` take as values,
read here from `config.agent` (and the device split) by the builders of the
agents that learn from a buffer: DQN (with R2D2's fields), MuZero, AlphaZero,
SAC and TD3.
"""

from ml_collections import ConfigDict

from podracer.agents.learning import replay
from podracer.agents.learning.replay import ReplaySettings, ReplaySetup
from podracer.config import field_checks, settings
from podracer.config.errors import ConfigError
from podracer.devices.device_split import environments_per_learner_device, learn_calls_per_update

DEFAULTS = settings.defaults(ReplaySettings)
"""The replay fields of `config.agent` for an agent that learns from a buffer."""

RECURRENT_DEFAULTS = {
    "burn_in": 0,  # Steps at a sequence's start that only warm the recurrent state (a recurrent core only).
    "sequence_length": 1,  # Transitions per sampled sequence, burn-in included (> 1 for a recurrent core only).
    "priority_eta": 0.9,  # A sequence's priority: eta max |TD| + (1 - eta) mean |TD| of its trained transitions.
}
"""R2D2's fields of DQN's `config.agent`."""


def validate(config: ConfigDict) -> None:
    """Static checks of the replay fields (the `DEFAULTS` keys in `config.agent`)."""
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


def setup(config: ConfigDict, sequence_length: int) -> ReplaySetup:
    """The buffer and replay loop `config.agent`'s replay fields describe, sampling sequences of `sequence_length`."""
    return replay.setup(
        settings.read(ReplaySettings, config.agent),
        rows=environments_per_learner_device(config),
        learn_calls_per_update=learn_calls_per_update(config),
        unroll_length=config.unroll_length,
        sequence_length=sequence_length,
    )
