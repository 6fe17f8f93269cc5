"""Anakin IPPO on MPE simple_spread (JaxMARL) with JaxMARL's own baseline settings (`baselines/IPPO/ippo_ff_mpe.py`).

Three agents cover three landmarks; each is paid half the team's coverage (minus
the distance from each landmark to its nearest agent) and half its own
collisions. As `config/ippo_ff_mpe.yaml`: 16 environments x 128 steps, 4
epochs x 4 minibatches over every agent's transitions, Adam 2.5e-4 annealed to
0, gradients clipped at 0.5, separate 64-64 tanh actor and critic shared by
the agents, 1e7 environment steps (4,882 updates). The agents also read their
one-hot id (`agent.share_parameters`); an episode's time limit bootstraps
where JaxMARL's script treats it as terminal. podracer reports the agents'
mean return; JaxMARL's log wrapper reports three times the mean, their sum
(`docs/multi-agent.md`).
"""

from podracer import defaults


def get_config():
    config = defaults("ippo")
    config.env.name = "jaxmarl:MPE_simple_spread_v3"
    config.num_envs = 16
    config.unroll_length = 128
    config.total_steps = 9_998_336  # 4,882 updates of 16 x 128 steps: JaxMARL's int(1e7 / 128 / 16).
    config.network.shared_torso = False
    config.optimizer.learning_rate = 2.5e-4
    config.optimizer.anneal_lr = True
    config.updates_per_dispatch = 100
    return config
