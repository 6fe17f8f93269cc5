"""Sebulba IMPALA on Atari Pong with the IMPALA paper's deep agent: the ResNet torso, then an LSTM of 256 units.

Espeholt et al. (2018), Figure 3 (right, "deep"): the 15-layer residual torso
(channels 16-32-32, two residual blocks per stage, a 256-unit dense layer),
an LSTM core of 256 units, then the policy and baseline heads. Everything
else is `sebulba_pong_impala.py`'s set-up (the paper's Atari hyperparameters).
The agent is recurrent (`podracer.agents.models.cores`): each actor thread keeps its
environments' LSTM states on its actor device from one rollout to the next,
sends each rollout's initial states with the trajectory, and the learner
replays the 20 steps from them. The frames are stacked (4) as in the
feed-forward config; `--config.env.kwargs.stack_num=1` leaves memory as the
only way to see the ball move. Meant for accelerators.
"""

import os

from podracer import load_config


def get_config():
    config = load_config(os.path.join(os.path.dirname(__file__), "sebulba_pong_impala.py"))
    config.network.core = "lstm"
    config.network.core_size = 256
    return config
