"""Where actions meet an environment: which are legal (an action mask), and clipping real-valued ones to bounds.

Legal actions. An environment whose legal actions change (Jumanji's, Pgx's
games) observes a dict whose `ACTION_MASK` entry is a bool `[A]`, True where
the action is legal. The observation carries it to `act`, where the
categorical head gives illegal actions no probability; torsos read the other
entries (`network_input`).

A game's state. Self-play on a Pgx game (`env.kwargs.self_play`) puts the
game's own state in the observation dict under `GAME_STATE`, for a search
that steps the game's rules from where the agent acts (AlphaZero). It is the
agent's, like the mask: no torso reads it (`network_input`). Any pure-JAX
environment can do the same for a search that steps it as its model (Sampled
AlphaZero): with `env.kwargs.observe_state` its observation holds its state
under `ENV_STATE` (`podracer.envs.observed_state`), and its own observation
under `OBSERVATION` where that is not already a dict. Nor does any
torso read a multi-agent environment's `GLOBAL_STATE`, which only a
centralised critic reads (`centralised_input`, with the agent's one-hot
`AGENT_ID` that a multi-agent agent adds; `podracer.envs.multi_agent`).

Clipping. A Gaussian policy samples unbounded actions. The trajectory keeps the sample
itself, so its log-probability under the policy that drew it stays exact; only
the copy handed to the environment is clipped (as CleanRL's `ClipAction` and
PureJaxRL's `ClipAction` wrappers do). Anakin's training wrappers and
Sebulba's actors both call `clip_to_spec`, the one rule.
"""

from typing import Any

import chex
import jax.numpy as jnp
import numpy as np
from dm_env import specs


def clip_to_spec(action: Any, spec: Any, xp: Any = jnp) -> Any:
    """`action` clipped into a real-valued `BoundedArray`'s bounds (in its dtype); any other action unchanged.

    `xp` is the array module, `jax.numpy` or `numpy`.
    """
    if not is_continuous(spec) or not isinstance(spec, specs.BoundedArray):
        return action
    return xp.clip(action, spec.minimum, spec.maximum).astype(spec.dtype)


def is_continuous(spec: Any) -> bool:
    """Whether an action spec describes real-valued actions (not discrete ids)."""
    return isinstance(spec, specs.Array) and np.issubdtype(spec.dtype, np.floating)


ACTION_MASK = "action_mask"
GAME_STATE = "game_state"
ENV_STATE = "env_state"  # An environment's own state, for a search that steps it (`observed_state`).
OBSERVATION = "observation"  # What an environment observes, where a dict holds it beside entries for the agent.
GLOBAL_STATE = "global_state"  # A multi-agent environment's state for a centralised critic (`multi_agent`).
# Entries of an observation dict that no torso reads.
FOR_THE_AGENT = (ACTION_MASK, GAME_STATE, ENV_STATE, GLOBAL_STATE)
AGENT_ID = "agent_id"  # The one-hot id a multi-agent agent adds to each agent's observation: policy and critic read it.


def action_mask(observation: Any) -> chex.Array | None:
    """The observation's bool mask of legal actions `[..., A]`, or None where it has none."""
    return observation.get(ACTION_MASK) if isinstance(observation, dict) else None


def without_entry(observation: dict[str, Any], name: str) -> dict[str, Any]:
    """An observation dict (or its spec) without its entry `name`: a state only a search reads (`GAME_STATE`,
    `ENV_STATE`), where a buffer, a network's parameters or a dataset leave it out."""
    return {key: value for key, value in observation.items() if key != name}


def network_input(observation: Any) -> Any:
    """What a torso reads: the observation without the entries for the agent alone, `FOR_THE_AGENT` (unchanged where it
    has none)."""
    if not isinstance(observation, dict) or not any(key in observation for key in FOR_THE_AGENT):
        return observation
    return {key: value for key, value in observation.items() if key not in FOR_THE_AGENT}


def centralised_input(observation: dict) -> dict:
    """What a centralised critic's torso reads: the global state, with the agent's id where the observation has one."""
    return {key: observation[key] for key in (GLOBAL_STATE, AGENT_ID) if key in observation}
