"""Anakin: pure-JAX environments and the agent update compiled into one replicated program.

`podracer.train` runs it for a config whose `architecture` is `"anakin"`;
`program` holds the per-device program, `train` the host loop, `settings`
its config fields, and `playback` plays a trained agent for watching (`play`).
Imports the layers below it (`config`, `devices`, `envs`, `agents`, `run`),
never Sebulba.
"""

from podracer.anakin.playback import Playback, play

__all__ = ["Playback", "play"]
