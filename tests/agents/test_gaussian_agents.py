"""Every built-in actor-critic agent learns with the Gaussian head, on a continuous task written here.

The task is a cued target: the observation is a point in [-1, 1]^2 and the
reward is minus the squared distance of the (clipped) action to it, one step
per episode. Acting with the head's initial N(0, 1) scores about -1.7 (per
dimension E[clip(z)^2] + E[target^2] = 0.52 + 0.33); an agent that reads the
cue scores near 0. With half the targets near
a bound, an agent that kept the clipped action in its trajectory would learn
a biased mean; the threshold leaves no room for that.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dm_env import specs

import podracer
from podracer.envs import restart, transition

RANDOM_RETURN = -1.7


@dataclasses.dataclass(frozen=True)
class CuedTarget(podracer.envs.Environment):
    def reset(self, key):
        target = jax.random.uniform(key, (2,), minval=-1.0, maxval=1.0)
        return target, restart(target)

    def step(self, target, action):
        reward = -jnp.sum((action - target) ** 2)
        return target, transition(target, reward, terminated=True, truncated=False)

    def observation_spec(self):
        return specs.BoundedArray((2,), np.float32, -1.0, 1.0)

    def action_spec(self):
        return specs.BoundedArray((2,), np.float32, -1.0, 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["actor_critic", "impala", "ppo"])
@pytest.mark.learning("last 100 episodes", at_least=0.05 * RANDOM_RETURN, random=RANDOM_RETURN)
def test_agent_learns_a_continuous_task(agent, learning):
    config = podracer.defaults(agent)
    config.update(total_steps=150_000, num_envs=32, unroll_length=4, updates_per_dispatch=100, seed=learning.seed)
    config.optimizer.learning_rate = 3e-3
    config.agent.entropy_cost = 0.0
    result = podracer.train(config, env=CuedTarget())
    learning.check(podracer.recent_return(result.history))
