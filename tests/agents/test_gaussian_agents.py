"""Every built-in actor-critic agent learns with the Gaussian head, on a continuous task of one step
(`tests/agents/cued_target.py`): an agent that reads the cue scores near 0, the head's initial N(0, 1) about -1.7.
With half the targets near a bound, an agent that kept the clipped action in its trajectory would learn a biased
mean; the threshold leaves no room for that.
"""

import pytest

import podracer
from tests.agents.cued_target import GAUSSIAN_INITIAL_RETURN, CuedTarget


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["actor_critic", "impala", "ppo"])
@pytest.mark.learning("last 100 episodes", at_least=0.05 * GAUSSIAN_INITIAL_RETURN, random=GAUSSIAN_INITIAL_RETURN)
def test_agent_learns_a_continuous_task(agent, learning):
    config = podracer.defaults(agent)
    config.update(total_steps=150_000, num_envs=32, unroll_length=4, updates_per_dispatch=100, seed=learning.seed)
    config.optimizer.learning_rate = 3e-3
    config.agent.entropy_cost = 0.0
    result = podracer.train(config, env=CuedTarget())
    learning.check(podracer.recent_return(result.history))
