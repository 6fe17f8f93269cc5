"""Sebulba IPPO on PettingZoo's MPE simple_spread (the `mpe2` package), stepped on the host CPU.

The experiment of `anakin_mpe_spread_ippo` (JaxMARL's IPPO baseline
settings: 4 epochs x 4 minibatches over every agent's transitions, Adam 2.5e-4
annealed to 0, gradients clipped at 0.5, separate 64-64 tanh actor and critic
shared by the three agents, each reading its one-hot id) with PettingZoo's own
environment, `pettingzoo:mpe2.simple_spread_v3` (25 steps per episode, the
time limit a truncation). Two actor threads of 16 environments unroll 128
steps: 4,096 steps per update, as JaxMARL's 16 x 128 twice over. Acting stays
one update behind learning (policy_lag 1). Needs the pettingzoo extra: pip
install -e '.[pettingzoo]'.

Measured on 2 shared CPU cores (AMD EPYC), seed 0: the agents' mean return
over the last 100 episodes goes from -25.9 (the first 40,960 steps) to -21.3
at 450K steps and -19.2 at the end, 2.0M steps in 9 min 19 s: 3,800
environment steps per second (11,400 agent steps). The actor threads spend
three quarters of their time in PettingZoo's Python step, which holds the
GIL, and the learner waits 94% of the time: the environments set the pace.
That was with the environments stepped in the actor threads; they now step
in worker processes, one each, which gives the same run bit for bit but, on
those 2 busy cores, 0.57x the rate (docs/benchmarks.md). On a machine with
few cores, step them in the actor threads: env.kwargs.vectorization_mode =
"sync" (--config.env.kwargs.vectorization_mode=sync).
"""

from podracer import defaults


def get_config():
    config = defaults("ippo", architecture="sebulba")
    config.env.name = "pettingzoo:mpe2.simple_spread_v3"
    config.envs_per_thread = 16
    config.unroll_length = 128
    config.total_steps = 2_002_944  # 489 updates of 2 x 16 x 128 steps.
    config.network.shared_torso = False
    config.optimizer.learning_rate = 2.5e-4
    config.optimizer.anneal_lr = True
    return config
