"""Anakin MPO on gymnax's Pendulum-v1 (continuous torque in [-2, 2]), at `anakin_pendulum_sac.py`'s budget.

Everything MPO shares with SAC is SAC's config here (docs/benchmarks.md puts
the two side by side): 64 environments x 1 step per update, 2 gradient steps
each on batches of 256 transitions, 64-64 ReLU networks, Adam 2e-3, Polyak
tau 0.02, a 100,000-step buffer learning from 2,000 steps on, 102,400 steps.
MPO's own: 20 actions sampled per state and epsilon 0.1 for the E-step (Acme's),
duals learned by Adam 1e-2, and looser M-step bounds than Acme's
epsilon_mean 2.5e-3 and epsilon_stddev 1e-6, which are made for millions of
steps: here (seed 0, 102,400 steps) those scored -284 over the last 100
episodes, 0.01 and 1e-4 -255, 0.01 and 1e-3 -167, 0.05 and 1e-3 -155, 0.01
and 1e-2 -154. Seeds 0-2 score -155, -142 and -137 (SAC, side by side: -154,
-145, -142); a run takes 2-3 times SAC's time, its E-step and targets valuing
20 sampled actions per state. Needs the gymnax extra: pip install -e '.[gymnax]'.
"""

import os

from podracer import defaults, load_config
from podracer.config.loading import with_experiment_of


def get_config():
    sac = load_config(os.path.join(os.path.dirname(__file__), "anakin_pendulum_sac.py"))
    config = with_experiment_of(defaults("mpo"), sac)
    config.agent.epsilon_mean = 0.05
    config.agent.epsilon_stddev = 1e-3
    return config
