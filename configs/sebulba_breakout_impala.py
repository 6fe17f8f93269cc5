"""Sebulba IMPALA (V-trace) on Atari Breakout: the Pong set-up (see sebulba_pong_impala.py) on another game."""

import os

from podracer import load_config


def get_config():
    config = load_config(os.path.join(os.path.dirname(__file__), "sebulba_pong_impala.py"))
    config.env.name = "Breakout-v5"
    config.total_steps = 50_000_000  # Agent steps: 200M frames, the paper's budget.
    return config
