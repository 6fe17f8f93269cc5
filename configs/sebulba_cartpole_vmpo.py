"""Sebulba V-MPO on envpool's CartPole-v1, with IMPALA-style actors (as DeepMind ran V-MPO).

Two actor threads of 16 environments, unroll length 20, acting with the newest
parameters (policy_lag 0) and keeping their policy's outputs, which V-trace
corrects for where they lag; separate 64-64 tanh actor and critic, Adam 5e-4
(`configs/sebulba_cartpole_impala.py`'s), rewards scaled by the running
standard deviation of the discounted return. V-MPO's own fields are the
paper's discrete-action values (Song et al. 2020, Table 5): epsilon_eta 0.01,
epsilon_alpha 0.005; the target network is copied every 10 updates. Seeds 0-4
end at 495-500 over the last 100 episodes (tests/sebulba/test_train.py).
"""

import os

from podracer import defaults, load_config
from podracer.config.loading import with_experiment_of


def get_config():
    impala = load_config(os.path.join(os.path.dirname(__file__), "sebulba_cartpole_impala.py"))
    return with_experiment_of(defaults("vmpo", architecture="sebulba"), impala)
