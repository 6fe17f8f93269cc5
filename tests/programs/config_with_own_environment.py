"""A config file that brings its own environment: it registers `cued_bandit` and names it in `config.env.name`.

Run as `podracer train --config tests/programs/config_with_own_environment.py`,
it shows that `podracer.envs.register` makes a user's environment usable from
config files and the command line.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from dm_env import specs

import podracer
from podracer.envs import restart, transition


@dataclasses.dataclass(frozen=True)
class CuedBandit(podracer.envs.Environment):
    """One-step episodes: the observation shows one of `arms` lights; pulling that arm pays 1, any other 0."""

    arms: int = 3

    def reset(self, key):
        light = jax.random.randint(key, (), 0, self.arms)
        return light, restart(jax.nn.one_hot(light, self.arms))

    def step(self, light, action):
        reward = jnp.where(action == light, 1.0, 0.0)
        return light, transition(jnp.zeros(self.arms), reward, terminated=True, truncated=False)

    def observation_spec(self):
        return specs.BoundedArray((self.arms,), np.float32, 0.0, 1.0, name="lights")

    def action_spec(self):
        return specs.DiscreteArray(self.arms, name="arm")


podracer.envs.register("cued_bandit", CuedBandit)


def get_config():
    config = podracer.defaults("actor_critic")
    config.env.name = "cued_bandit"
    config.env.kwargs.arms = 4
    config.num_envs = 32
    config.unroll_length = 8
    config.total_steps = 32 * 8 * 10 * 8
    config.optimizer.learning_rate = 3e-3
    return config
