"""LPG's meta-training environments (Oh et al. 2020, "Discovering Reinforcement Learning Algorithms", Appendix A).

Tabular grid worlds (`lpg_tabular`), random grid worlds (`lpg_random_grid`)
and delayed chain MDPs (`lpg_delayed_chain`), each with its paper's variants
(`variant=`). Their layout is drawn when an agent's lifetime starts and kept
across its episodes (`lifetimes`): `env.draw_layout(key)` draws a training
layout, `env.start_lifetime(layout, key)` starts one, `env.held_out_layout(i)`
is a held-out layout, and `held_out_layouts=n` makes `reset` use those.
"""

from podracer.envs.lpg.chain import DelayedChain
from podracer.envs.lpg.lifetimes import HELD_OUT_MODULUS, LifetimeEnvironment, fingerprint, is_held_out
from podracer.envs.lpg.random_grid import RandomGridWorld
from podracer.envs.lpg.tabular import TabularGridWorld

__all__ = [
    "HELD_OUT_MODULUS",
    "DelayedChain",
    "LifetimeEnvironment",
    "RandomGridWorld",
    "TabularGridWorld",
    "fingerprint",
    "is_held_out",
]
