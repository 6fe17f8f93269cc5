"""`NetworkSettings`: what a config's `network` group says, as plain values the networks are built from.

The fields and their defaults are the `network` group's: the config schema
builds the group from them (`podracer.config.settings.defaults`), and an
agent's builder reads the group once (`settings.read`) and hands the values
down, so the networks, their states and their checks never see a config.
"""

import dataclasses

SEQUENCE_FIELDS = ("hidden_sizes", "channels", "head_hidden_sizes")


@dataclasses.dataclass(frozen=True)
class NetworkSettings:
    """A network's torso, recurrent core and heads (`podracer.agents.models.networks`)."""

    torso: str = "mlp"  # One of torsos.TORSOS; the pixel torsos read channels, num_blocks, hidden_size.
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    shared_torso: bool = True
    channels: tuple[int, ...] = (16, 32, 32)
    num_blocks: int = 2
    hidden_size: int = 256
    core: str = "none"  # A recurrent core between torso and heads (models.cores): none, lstm or gru.
    core_size: int = 256  # The core's units.
    head_hidden_sizes: tuple[int, ...] = ()  # Hidden layers of each head of its own, after the torso (and core).
    layer_norm: bool = False  # LayerNorm before each hidden activation of the mlp and multi_input torsos (PQN).

    def __post_init__(self) -> None:
        for name in SEQUENCE_FIELDS:  # A config's lists as tuples: the settings stay hashable, as flax fields must.
            object.__setattr__(self, name, tuple(getattr(self, name)))
