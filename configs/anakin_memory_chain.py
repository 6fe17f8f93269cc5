"""Anakin PPO with an LSTM on bsuite's MemoryChain (Osband et al., 2020): a task only an agent with memory solves.

The first observation of an episode shows a context bit (+1 or -1); the
agent then acts for `memory_length` = 20 more steps, seeing only the time
left, and its last action earns +1 if it matches the bit, -1 otherwise. A
feed-forward policy cannot know the bit at the end and stays at chance, a
mean return near 0 (`--config.network.core=none`); this LSTM carries the bit
across the 20 steps and reaches +1.

An episode is `memory_length + 1` steps and `AutoReset` spends one more on
the next episode's first timestep, so an unroll of `memory_length + 2` steps
holds exactly one whole episode (all environments start together): the loss
replays each episode from its first step, and the gradient reaches the step
that showed the bit. Change `unroll_length` with `memory_length`. A 64-unit
core learns about twice as fast as a 32-unit one, and annealing the learning
rate keeps a solved policy from the occasional collapse seen at a constant
1e-3. On the 2-core CI machine it passes a mean return of 0.9 after 30K-50K
steps (three seeds) and the 300K-step run takes 25-40 s.
"""

from podracer import defaults


def get_config():
    config = defaults("ppo")
    config.env.name = "gymnax:MemoryChain-bsuite"
    config.env.kwargs.memory_length = 20
    config.num_envs = 64
    config.unroll_length = 22  # memory_length + 2: one whole episode per unroll.
    config.total_steps = 299_904  # 213 updates of 64 x 22 steps.
    config.network.hidden_sizes = (64,)
    config.network.core = "lstm"
    config.network.core_size = 64
    config.optimizer.learning_rate = 1e-3
    config.optimizer.anneal_lr = True
    return config
