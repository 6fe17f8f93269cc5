"""Where actions enter an environment: real-valued actions are clipped into the action spec's bounds there.

A Gaussian policy samples unbounded actions. The trajectory keeps the sample
itself, so its log-probability under the policy that drew it stays exact; only
the copy handed to the environment is clipped (as CleanRL's `ClipAction` and
PureJaxRL's `ClipAction` wrappers do). Anakin's training wrappers and
Sebulba's actors both call `clip_to_spec`, the one rule.
"""

from typing import Any

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
