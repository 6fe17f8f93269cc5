"""Anakin behaviour cloning on a dataset of gymnax's MinAtar Breakout: the baseline discrete CQL is measured against.

`configs/anakin_minatar_breakout_cql.py`'s network (two dense layers of 128,
each with LayerNorm and ReLU, over the flattened 10x10x4 frame), batch,
optimiser, steps and evaluation, the logits trained by cross-entropy to the
dataset's actions. Record the dataset first from a PQN run (docs/offline.md).
Needs the gymnax and offline extras: pip install -e '.[gymnax,offline]'.
"""

import os

from podracer import load_config


def get_config():
    return load_config(os.path.join(os.path.dirname(__file__), "anakin_minatar_breakout_cql.py"), {"agent.name": "bc"})
