"""Sebulba IMPALA (V-trace) on Atari Breakout: the Pong set-up (see sebulba_pong_impala.py) on another game."""

import os
import runpy


def get_config():
    pong = runpy.run_path(os.path.join(os.path.dirname(__file__), "sebulba_pong_impala.py"))
    config = pong["get_config"](game="Breakout-v5")
    config.total_steps = 50_000_000  # Agent steps: 200M frames, the paper's budget.
    return config
